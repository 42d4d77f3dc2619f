package toolrpc_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// BenchmarkToolClientExecuteFenced is BenchmarkToolClientExecute's
// sequential call with and without the session's fence: the cost of the
// Agentfleet-Fence header, written by the client and parsed and checked by
// the worker.
func BenchmarkToolClientExecuteFenced(b *testing.B) {
	c := startEchoFleet(b)
	args := map[string]any{"text": "x"}
	tool := &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "echo"}}
	for _, tc := range []struct {
		name  string
		fence ownership.Fence
	}{
		{"unfenced", ownership.Fence{}},
		{"fenced", ownership.Fence{Partition: 17, Owner: "3f1c9a52-7d0e-4b8a-9c61-2e5f0d4b7a13", Epoch: 123456}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			exec := fleetexec.Executor{Client: c, Fence: tc.fence}
			n := 0
			for b.Loop() {
				n++
				prep := &pipeline.Prepared{
					Tool: tool, Args: args, Timeout: pipeline.DefaultTimeout, Agent: "bench", Session: "s1", RunID: "r1",
					Call: agentfleet.ToolCall{ID: "call_" + strconv.Itoa(n), Name: "echo", Arguments: args},
				}
				if _, err := exec.Execute(context.Background(), prep, func(any) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
