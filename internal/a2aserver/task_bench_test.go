package a2aserver

import (
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// BenchmarkTaskOf is the cost of reading a task's state from a session's
// records, which every wait does at each event and poll, by the length
// of the session (the task is its last run).
func BenchmarkTaskOf(b *testing.B) {
	for _, runs := range []int{1, 100, 1000} {
		var recs []history.Record
		for i := range runs {
			id, run := fmt.Sprintf("m%d", i), fmt.Sprintf("r%d", i)
			recs = append(recs,
				history.Record{RunID: run, Message: &agentfleet.UserMessage{Role: agentfleet.RoleUser, ID: id, Content: []agentfleet.Content{agentfleet.Text("hi")}}},
				history.Record{RunID: run, Message: &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("hello")}}},
				history.Record{RunID: run, Final: &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("hello")}, StopReason: agentfleet.StopReasonStop}})
		}
		key := fmt.Sprintf("m%d", runs-1)
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := TaskOf(recs, "s1", key); !ok {
					b.Fatal("no task")
				}
			}
		})
	}
}
