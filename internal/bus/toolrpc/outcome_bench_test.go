package toolrpc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
)

// BenchmarkOutcomeRecording measures one call of a tool that is not
// idempotent, end to end on a real server, with and without the worker
// recording its outcome (a marker in the background, the final frame
// before the reply).
func BenchmarkOutcomeRecording(b *testing.B) {
	for _, record := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "recorded"}[record], func(b *testing.B) {
			srv := bustest.MustRunNATS(b)
			var out *toolrpc.Outcomes
			if record {
				var err error
				if out, err = toolrpc.OpenOutcomesOn(context.Background(), bustest.MustConnect(b, srv), toolrpc.OutcomeConfig{}); err != nil {
					b.Fatal(err)
				}
			}
			release := make(chan struct{})
			close(release)
			w, err := toolrpc.Serve(bustest.MustConnect(b, srv), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{chargeTool(nil, release)}, Outcomes: out, Logger: quietLog})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { w.Stop() })
			c, err := toolrpc.NewToolClient(bustest.MustConnect(b, srv), toolrpc.ClientConfig{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Execute(context.Background(), &toolrpc.Call{ID: fmt.Sprint("call-", i), Name: "charge", Session: "s", RunID: "r", Timeout: 10 * time.Second}, func(any) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
