package fleetexec_test

import (
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// TestCall checks the plain call made of a prepared one, and that only
// idempotent or read-only tools' calls may be retried.
func TestCall(t *testing.T) {
	args := map[string]any{"x": 1}
	for _, tc := range []struct {
		name      string
		tool      *agentfleet.Tool
		retryable bool
	}{
		{"no tool", nil, false},
		{"plain tool", &agentfleet.Tool{}, false},
		{"idempotent", &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Annotations: agentfleet.Annotations{Idempotent: true}}}, true},
		{"read-only", &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Annotations: agentfleet.Annotations{ReadOnly: true}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prep := &pipeline.Prepared{
				Tool: tc.tool, Call: agentfleet.ToolCall{ID: "c1", Name: "t", Arguments: map[string]any{"raw": true}},
				Args: args, Timeout: 7e9, Agent: "a", Session: "s", RunID: "r", Allowed: []string{"t", "u"}, Gated: []string{"v"},
			}
			got := fleetexec.Call(prep)
			if got.ID != "c1" || got.Name != "t" || got.Timeout != 7e9 || got.Agent != "a" || got.Session != "s" || got.RunID != "r" {
				t.Errorf("Call = %+v", got)
			}
			if got.Args["x"] != 1 || len(got.Args) != 1 {
				t.Errorf("Args = %v, want the prepared arguments %v", got.Args, args)
			}
			if len(got.Allowed) != 2 || len(got.Gated) != 1 || got.Notify != nil {
				t.Errorf("Allowed, Gated, Notify = %v, %v, %v", got.Allowed, got.Gated, got.Notify)
			}
			if got.Retryable != tc.retryable {
				t.Errorf("Retryable = %v, want %v", got.Retryable, tc.retryable)
			}
		})
	}
}
