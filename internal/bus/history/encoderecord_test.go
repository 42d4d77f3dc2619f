package history

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

func TestEncodeRecordErrors(t *testing.T) {
	long := strings.Repeat("r", maxRunIDBytes+1)
	tests := []struct {
		name string
		r    Record
		want string
	}{
		{"a user message without a run id", Record{Message: &agentfleet.UserMessage{}}, "history: user message: run id of 0 bytes"},
		{"a final message with a run id too long", Record{RunID: long, Final: &agentfleet.AssistantMessage{}}, "history: final message: run id of"},
		{"an approval request", Record{Approval: &agentfleet.ApprovalRequest{}}, "history: approval request: run id of 0 bytes"},
		{"a summary", Record{Summary: &agentfleet.ContextSummary{}}, "history: summary: run id of 0 bytes"},
		{"nothing to store", Record{RunID: "r1"}, "history: record of run r1 holds nothing to store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := encodeRecord(tt.r, nil)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("encodeRecord error = %v, want one beginning %q", err, tt.want)
			}
		})
	}
}

// BenchmarkEncodeRecord is the encoding of a tool call's assistant message
// into a history record, the most frequent record of a run.
func BenchmarkEncodeRecord(b *testing.B) {
	r := Record{RunID: "0b6f3c1e-8c0f-4a7e-9d1b-2f4a5c6d7e8f", Message: &agentfleet.AssistantMessage{RunID: "0b6f3c1e-8c0f-4a7e-9d1b-2f4a5c6d7e8f"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := encodeRecord(r, nil); err != nil {
			b.Fatal(err)
		}
	}
}
