package wire

import (
	"bytes"
	"testing"

	"github.com/agentfleet/agentfleet"
)

// TestEncodeFrameBufIsEncodeFrame checks that the worker's pooled encoding
// writes the bytes EncodeFrame does, buffer after buffer.
func TestEncodeFrameBufIsEncodeFrame(t *testing.T) {
	frames := []*Frame{
		benchAck, benchResult,
		{T: FrameHeartbeat, ID: "c"},
		{T: FrameProgress, ID: "c", Partial: map[string]any{"n": 3.0}},
		{T: FrameResult, ID: "c", Worker: "w/1", Result: agentfleet.ErrorResult("no"), IsError: true},
		{T: FrameError, ID: "c", Worker: "w/1", Error: "bad", Code: CodeBadRequest},
		{T: FrameBusy, ID: "c", Worker: "w/1", InFlight: 4, Limit: 4},
	}
	for range 2 {
		for _, f := range frames {
			want, err := EncodeFrame(f)
			if err != nil {
				t.Fatal(err)
			}
			buf, err := EncodeFrameBuf(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s frame: pooled encoding % x, want % x", f.T, buf.Bytes(), want)
			}
			PutFrameBuf(buf)
		}
	}
}
