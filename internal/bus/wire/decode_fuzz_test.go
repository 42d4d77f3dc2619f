package wire

import (
	"testing"

	"github.com/agentfleet/agentfleet"
)

// The fuzz targets run the decoders on any bytes and check, besides what a
// decoded message must hold, the bound on what decoding may allocate
// (decodeBound). Every bomb of decode_test.go is a seed, in every place it
// can sit.

func addBombs(f *testing.F) {
	for _, b := range bombValues {
		for _, wrap := range []func([]byte) []byte{bombRequest, bombFrame, bombResultFrame, bombCancel} {
			f.Add(wrap(b.value))
		}
	}
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
}

// checkBound fails t if decode allocates more than decodeBound(len(data)).
// A measurement over the bound is taken again before failing, so that an
// allocation of the fuzzing machinery running meanwhile is not blamed on
// the decoder.
func checkBound(t *testing.T, data []byte, decode func()) {
	bound := decodeBound(len(data))
	for range 3 {
		if n := allocated(decode); n <= bound {
			return
		}
	}
	t.Errorf("decoding %d bytes allocated more than %d bytes, every time", len(data), bound)
}

func FuzzDecodeFrame(f *testing.F) {
	for _, fr := range []*Frame{{T: FrameAck, Worker: "w"}, {T: FrameResult, Result: agentfleet.TextResult("x")}, {T: FrameProgress, Partial: []any{1, "a"}}} {
		b, _ := EncodeFrame(fr)
		f.Add(b)
	}
	f.Add([]byte{0x81, 0xa1, 't'})
	addBombs(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := DecodeFrame(data)
		if err == nil && fr.T == "" {
			t.Error("decoded a frame without a type")
		}
		if err == nil && fr.T == FrameResult && fr.Result == nil {
			t.Error("decoded a result frame without a result")
		}
		checkBound(t, data, func() { _, _ = DecodeFrame(data) })
	})
}

func FuzzDecodeRequest(f *testing.F) {
	b, _ := EncodeRequest(&CallRequest{V: 1, ID: "c", Tool: "echo", Args: map[string]any{"text": "hi", "n": []any{1, 2.5, map[string]any{"k": nil}}}, Allowed: []string{"echo"}})
	f.Add(b)
	f.Add([]byte{0x80})
	addBombs(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRequest(data)
		if err == nil && (r.ID == "" || r.Tool == "" || r.Args == nil) {
			t.Errorf("decoded an incomplete request %+v", r)
		}
		checkBound(t, data, func() { _, _ = DecodeRequest(data) })
	})
}

func FuzzDecodeCancel(f *testing.F) {
	b, _ := EncodeFrame(&Frame{T: FrameCancel, ID: "c", Inbox: "_INBOX.abc.1"})
	f.Add(b)
	addBombs(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCancel(data)
		if err == nil && (c.T != FrameCancel || c.ID == "") {
			t.Errorf("decoded a cancel without its type or id: %+v", c)
		}
		checkBound(t, data, func() { _, _ = DecodeCancel(data) })
	})
}
