package limiter_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/limiter"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/quota"
)

// BenchmarkModelCall times one model call through the real client against
// a local test server (no rate limit of its own), without a gate and with
// the fleet's limiter (limits far above the rate reached, so that the
// cost measured is the compare-and-set of each grant and release, not a
// wait).
func BenchmarkModelCall(b *testing.B) {
	srv := llmtest.NewRateServer(b, 0, "", llmtest.TextReply("ok"))
	natsSrv := bustest.MustRunNATS(b)
	l, err := limiter.New(context.Background(), bustest.MustConnect(b, natsSrv), limiter.Config{
		Node: "bench", Subjects: bus.Subjects{Prefix: "agent"},
		Models: map[string]limiter.Model{"m": {Endpoint: "e", Limits: quota.Limits{RPM: 1 << 30, TPM: 1 << 40, Concurrent: 1 << 20}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(l.Close)
	req := &loop.Request{Model: "m", Messages: []agentfleet.Message{agentfleet.NewUserMessage("hi")}, Agent: "a", Session: "s", EstimatedTokens: 10}
	for _, bc := range []struct {
		name string
		gate quota.Gate
	}{{"no_limiter", nil}, {"limiter", l}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := llm.Config{BaseURL: srv.BaseURL(), Model: "m"}
			if bc.gate != nil {
				cfg.Gate = bc.gate
			}
			c, err := llm.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := c.Complete(context.Background(), req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
