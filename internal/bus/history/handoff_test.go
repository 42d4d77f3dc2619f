package history

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestHandoffRecord: a handoff record round-trips, and one that names no agent is skipped with its place named.
func TestHandoffRecord(t *testing.T) {
	h := &Handoff{From: "support", To: "billing", Reason: "a refund", ToolCallID: "call_1"}
	e, _, err := encodeRecord(Record{RunID: "r1", Handoff: h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.kind != RecordHandoff {
		t.Errorf("kind = %q", e.kind)
	}
	hdr := nats.Header{}
	hdr.Set(HeaderRecord, e.kind)
	hdr.Set(HeaderRunID, "r1")
	recs, skipped := Decode(7, hdr, e.data)
	if len(skipped) != 0 || len(recs) != 1 || recs[0].Handoff == nil || *recs[0].Handoff != *h || recs[0].RunID != "r1" {
		t.Fatalf("Decode = %+v, %+v", recs, skipped)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"no agent", `{"from":"support"}`, "history record 7 (handoff of run r1): names no agent to hand over to"},
		{"not JSON", `{`, "history record 7 (handoff of run r1): unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, skipped := Decode(7, hdr, []byte(tc.data))
			if len(recs) != 0 || len(skipped) != 1 || !strings.Contains(skipped[0].Err.Error(), tc.want) {
				t.Errorf("Decode = %+v, %+v; want skipped with %q", recs, skipped, tc.want)
			}
		})
	}
}
