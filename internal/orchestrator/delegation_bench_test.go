package orchestrator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// BenchmarkAgentAsTool measures one ask of boss whose model asks
// researcher as a tool (two runs, three model calls, the child's ask
// relayed through the input stream), against one ask of researcher alone,
// on one durable orchestrator, each in a new session.
func BenchmarkAgentAsTool(b *testing.B) {
	for _, tc := range []struct{ name, agent, text string }{
		{"direct", "researcher", "q"},
		{"as a tool", "boss", "via researcher: q"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := bustest.MustRunNATS(b)
			nc := bustest.MustConnect(b, srv)
			o, err := orchestrator.New(bustest.MustConnect(b, srv), orchestrator.Config{Model: newTeam(), Durable: true,
				Discovery: fleet.FleetConfig{Wait: 100 * time.Millisecond},
				Profiles:  []orchestrator.Profile{{Name: "boss", Agents: []string{"researcher"}}, {Name: "researcher"}}})
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
				if _, err := nc.Request("agent.ask."+tc.agent+"."+fmt.Sprintf("b%d", i), []byte(`{"content":"`+tc.text+`"}`), 15*time.Second); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
