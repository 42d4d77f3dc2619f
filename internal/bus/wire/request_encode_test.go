package wire

import (
	"bytes"
	"testing"
	"time"
)

// TestEncodeCallIsEncodeRequest checks that the client's pooled encoding
// of a call request is byte for byte EncodeRequest's.
func TestEncodeCallIsEncodeRequest(t *testing.T) {
	args := map[string]any{"n": 1.5} // one key: map order is random
	buf, err := EncodeRequestBuf(CallRequest{
		V: ProtocolVersion, ID: "c1", Tool: "echo", Args: args, TimeoutMS: (30 * time.Second).Milliseconds(), Attempt: 2,
		Agent: "a", Session: "s", RunID: "r", Allowed: []string{"x", "y"}, Gated: []string{"z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer PutBuffer(buf)
	want, err := EncodeRequest(&CallRequest{
		V: ProtocolVersion, ID: "c1", Tool: "echo", Args: args, TimeoutMS: 30000, Attempt: 2,
		Agent: "a", Session: "s", RunID: "r", Allowed: []string{"x", "y"}, Gated: []string{"z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("EncodeRequestBuf = %x, want %x", buf.Bytes(), want)
	}
	got, err := DecodeRequest(buf.Bytes())
	if err != nil {
		t.Errorf("decode: %v", err)
	} else if len(got.Gated) != 1 || got.Gated[0] != "z" {
		t.Errorf("decoded gated = %q, want [z]", got.Gated)
	}
}
