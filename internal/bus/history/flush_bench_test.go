package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
)

// BenchmarkRunFlush stores a run as the durable path does: its user
// message, two tool calls and their results buffered, then the run end
// appended, which flushes the six records as one envelope, one waited
// publish. Sessions flush in parallel (-cpu sets how many goroutines run
// them, each its own session), so that ns/op is near the CPU of a flush,
// the embedded server's included, rather than the latency of its ack.
//
//	go test -run '^$' -bench BenchmarkRunFlush -cpu 64 ./internal/bus/history/
func BenchmarkRunFlush(b *testing.B) {
	st, _, _ := open(b, "w")
	ctx := context.Background()
	var sessions atomic.Int64
	user := agentfleet.NewUserMessage("what is 2+3, and then 4+5?")
	call := func(id string) *agentfleet.AssistantMessage {
		return &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, StopReason: agentfleet.StopReasonToolUse, Model: "m",
			Content: []agentfleet.Content{{Type: agentfleet.ContentToolCall, ID: id, Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`)}},
			Usage:   &agentfleet.Usage{InputTokens: 100, OutputTokens: 10, TotalTokens: 110}}
	}
	result := func(id string) *agentfleet.ToolResultMessage {
		return &agentfleet.ToolResultMessage{Role: agentfleet.RoleTool, ToolCallID: id, ToolName: "echo", Content: []agentfleet.Content{agentfleet.Text("x")}}
	}
	end := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, StopReason: agentfleet.StopReasonStop, Content: []agentfleet.Content{agentfleet.Text("5 and 9")}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := st.Writer("default", fmt.Sprintf("s%d", sessions.Add(1)), 0, ownership.Unfenced, ownership.Fence{})
		for n := 0; pb.Next(); n++ {
			run := fmt.Sprintf("run-%d", n)
			for _, m := range []agentfleet.Message{user, call("c1"), result("c1"), call("c2"), result("c2")} {
				if err := w.Buffer(ctx, history.Record{RunID: run, Message: m}); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := w.AppendRunEnd(ctx, run, end); err != nil {
				b.Fatal(err)
			}
		}
	})
}
