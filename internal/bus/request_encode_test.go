package bus

import (
	"bytes"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// TestEncodeCallIsEncodeRequest checks that the client's pooled encoding
// of a call request is byte for byte EncodeRequest's.
func TestEncodeCallIsEncodeRequest(t *testing.T) {
	prep := &pipeline.Prepared{
		Call: agentfleet.ToolCall{ID: "c1", Name: "echo"}, Args: map[string]any{"n": 1.5}, // one key: map order is random
		Timeout: 30 * time.Second, Agent: "a", Session: "s", RunID: "r", Allowed: []string{"x", "y"}, Gated: []string{"z"},
	}
	buf, err := encodeCall(prep, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer putBuffer(buf)
	want, err := EncodeRequest(&CallRequest{
		V: ProtocolVersion, ID: "c1", Tool: "echo", Args: prep.Args, TimeoutMS: 30000, Attempt: 2,
		Agent: "a", Session: "s", RunID: "r", Allowed: []string{"x", "y"}, Gated: []string{"z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("encodeCall = %x, want %x", buf.Bytes(), want)
	}
	got, err := DecodeRequest(buf.Bytes())
	if err != nil {
		t.Errorf("decode: %v", err)
	} else if len(got.Gated) != 1 || got.Gated[0] != "z" {
		t.Errorf("decoded gated = %q, want [z]", got.Gated)
	}
}
