package approval_test

import (
	"slices"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/approval"
)

func TestPolicyNested(t *testing.T) {
	tool := func(name string, destructive bool) *agentfleet.Tool {
		return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Annotations: agentfleet.Annotations{Destructive: destructive}}}
	}
	echo, relay, rm, mcpDelete := tool("echo", false), tool("relay", false), tool("rm", true), tool("fs_delete", true)
	upper := tool("ECHO", false)
	all := []*agentfleet.Tool{echo, relay, rm, mcpDelete, upper}
	for _, tc := range []struct {
		name           string
		p              approval.Policy
		tools          []*agentfleet.Tool
		allowed, gated []string
	}{
		{"no policy: every tool", approval.Policy{}, all, []string{"echo", "relay", "rm", "fs_delete", "ECHO"}, nil},
		{"a named tool is gated", approval.Policy{Tools: []string{"echo"}}, all, []string{"relay", "rm", "fs_delete", "ECHO"}, []string{"echo"}},
		// Names are matched as the direct call matches them: "ECHO" is
		// another tool, gated only if the policy names it.
		{"case: another name, another tool", approval.Policy{Tools: []string{"echo"}}, []*agentfleet.Tool{upper}, []string{"ECHO"}, nil},
		{"glob gates every match", approval.Policy{Tools: []string{"*cho", "r*"}}, all, []string{"fs_delete", "ECHO"}, []string{"echo", "relay", "rm"}},
		{"glob of every tool", approval.Policy{Tools: []string{"*"}}, all, []string{}, []string{"echo", "relay", "rm", "fs_delete", "ECHO"}},
		{"destructive annotation of the callee", approval.Policy{Destructive: true}, all, []string{"echo", "relay", "ECHO"}, []string{"rm", "fs_delete"}},
		{"a gated scripted tool is not reachable nested", approval.Policy{Tools: []string{"relay"}}, []*agentfleet.Tool{echo, relay}, []string{"echo"}, []string{"relay"}},
		{"nil tools skipped", approval.Policy{Tools: []string{"echo"}}, []*agentfleet.Tool{nil, echo, nil}, []string{}, []string{"echo"}},
		{"no tools", approval.Policy{Tools: []string{"echo"}}, nil, []string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allowed, gated := tc.p.Nested(tc.tools)
			if !slices.Equal(allowed, tc.allowed) || !slices.Equal(gated, tc.gated) {
				t.Errorf("Nested = allowed %q, gated %q; want allowed %q, gated %q", allowed, gated, tc.allowed, tc.gated)
			}
			for _, g := range gated {
				if slices.Contains(allowed, g) {
					t.Errorf("tool %s is both allowed and gated", g)
				}
			}
		})
	}
}
