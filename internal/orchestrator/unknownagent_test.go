package orchestrator

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/input"
)

// TestUnknownAgent checks that every entry point naming an agent refuses
// an unknown one with the one error, which names the agents there are.
func TestUnknownAgent(t *testing.T) {
	o := &Orchestrator{agents: map[string]*agent{"ops": nil, "default": nil}}
	const want = `unknown agent "ghost" (agents: default, ops)`
	tests := []struct {
		name string
		call func() error
	}{
		{"CheckAgent", func() error { return o.CheckAgent("ghost") }},
		{"CallTool", func() error {
			_, err := o.CallTool(context.Background(), "ghost", "s", agentfleet.ToolCall{Name: "x"}, nil)
			return err
		}},
		{"Ask", func() error {
			_, err := o.Ask(context.Background(), "ghost", "s", "hi", nil)
			return err
		}},
		{"HandleInput", func() error { return o.HandleInput(&input.Inbound{Agent: "ghost", Session: "s"}) }},
		{"Session", func() error {
			_, err := o.Session("ghost", "s")
			return err
		}},
		{"check", func() error { return o.check(&input.Inbound{Agent: "ghost", Session: "s"}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, ErrUnknownAgent) {
				t.Fatalf("err = %v, want one matching ErrUnknownAgent", err)
			}
			var ue *UnknownAgentError
			if !errors.As(err, &ue) || ue.Agent != "ghost" {
				t.Errorf("err = %#v, want an *UnknownAgentError for ghost", err)
			}
			if got := err.Error(); got != want {
				t.Errorf("err = %q, want %q", got, want)
			}
		})
	}
	if err := o.CheckAgent("ops"); err != nil {
		t.Errorf("CheckAgent(ops) = %v, want nil", err)
	}
}
