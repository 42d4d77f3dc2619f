package orchestrator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// BenchmarkHandoff measures two asks of one new session of support on the
// offline model, on one durable orchestrator: the first hands the session
// over to billing and the second is billing's (a handoff record stored,
// the session loaded again), against two plain asks.
func BenchmarkHandoff(b *testing.B) {
	for _, tc := range []struct{ name, first string }{
		{"two asks", "hello"},
		{"a handoff, then an ask", "transfer to billing"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := bustest.MustRunNATS(b)
			nc := bustest.MustConnect(b, srv)
			o, err := orchestrator.New(bustest.MustConnect(b, srv), orchestrator.Config{Model: llm.Offline{}, Durable: true,
				Discovery: fleet.FleetConfig{Wait: 100 * time.Millisecond},
				Profiles:  []orchestrator.Profile{{Name: "support", Handoffs: []string{"billing"}}, {Name: "billing"}}})
			if err != nil {
				b.Fatal(err)
			}
			if err := o.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				o.Close(ctx)
			})
			b.ResetTimer()
			for i := range b.N {
				subject := fmt.Sprintf("agent.ask.support.h%d", i)
				for j, text := range []string{tc.first, "hello"} {
					reply, err := nc.Request(subject, []byte(`{"content":"`+text+`"}`), 15*time.Second)
					if err != nil {
						b.Fatal(err)
					}
					if handed := strings.Contains(string(reply.Data), "handed this conversation over to agent billing"); handed != (j == 0 && tc.first != "hello") {
						b.Fatalf("reply %d: %s", j+1, reply.Data)
					}
				}
			}
		})
	}
}
