package scripts_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/scripts"
)

func TestCheckNested(t *testing.T) {
	gatedEcho := fmt.Sprintf(scripts.NestedApprovalText, "echo", "agent-a", "echo")
	for _, tc := range []struct {
		name   string
		caller toolrpc.Caller
		tool   string
		want   string // "" allowed, else a part of the error
	}{
		{"allowed", toolrpc.Caller{Agent: "agent-a", Allowed: []string{"echo", "relay"}}, "echo", ""},
		{"gated", toolrpc.Caller{Agent: "agent-a", Allowed: []string{"relay"}, Gated: []string{"echo"}}, "echo", gatedEcho},
		// A request that lists a tool both ways (forged, or a bug) is
		// refused: gated wins.
		{"hostile: gated and allowed", toolrpc.Caller{Agent: "agent-a", Allowed: []string{"echo", "relay"}, Gated: []string{"echo"}}, "echo", gatedEcho},
		{"hostile: gated without any list", toolrpc.Caller{Agent: "agent-a", Gated: []string{"echo"}}, "echo", gatedEcho},
		{"hostile: other case is another tool", toolrpc.Caller{Agent: "agent-a", Allowed: []string{"relay"}, Gated: []string{"echo"}}, "ECHO", "call_tool: tool ECHO is not allowed for agent agent-a"},
		{"hostile: glob as a name", toolrpc.Caller{Agent: "agent-a", Allowed: []string{"relay"}, Gated: []string{"echo"}}, "ec*", "call_tool: tool ec* is not allowed for agent agent-a"},
		{"no list", toolrpc.Caller{Agent: "agent-a"}, "echo", "carried no allowed list"},
		{"not listed", toolrpc.Caller{Agent: "agent-a", Allowed: []string{"relay"}}, "echo", "call_tool: tool echo is not allowed for agent agent-a"},
		{"no agent named", toolrpc.Caller{Allowed: []string{"relay"}, Gated: []string{"echo"}}, "echo", "tool echo of agent (unnamed) needs a person's approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := scripts.CheckNested(tc.caller, tc.tool)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckNested = %v, want allowed", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckNested = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
