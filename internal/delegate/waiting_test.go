package delegate_test

import (
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/delegate"
)

// TestWaiting: a call reports the tool.approval events of its own child
// session alone, naming the child's call, and at most MaxWaitingReports.
func TestWaiting(t *testing.T) {
	pending := agentfleet.Event{Type: agentfleet.EventToolApproval, Agent: "researcher", Session: "c1",
		ToolCallID: "call_1", ToolName: "danger", Decision: agentfleet.ApprovalPending}
	with := func(f func(e *agentfleet.Event)) *agentfleet.Event { e := pending; f(&e); return &e }
	cases := []struct {
		name string
		e    *agentfleet.Event
		want bool
	}{
		{"pending", &pending, true},
		{"decided", with(func(e *agentfleet.Event) { e.Decision = agentfleet.ApprovalApproved }), true},
		{"nil", nil, false},
		{"another session", with(func(e *agentfleet.Event) { e.Session = "c2" }), false},
		{"another agent", with(func(e *agentfleet.Event) { e.Agent = "coder" }), false},
		{"another kind", with(func(e *agentfleet.Event) { e.Type = agentfleet.EventToolStart }), false},
		{"no call", with(func(e *agentfleet.Event) { e.ToolCallID = "" }), false},
	}
	for _, c := range cases {
		var w delegate.Waiting
		p, ok := w.Report(c.e, "researcher", "c1")
		if ok != c.want {
			t.Errorf("%s: reported %v, want %v", c.name, ok, c.want)
			continue
		}
		if !ok {
			continue
		}
		got := p["child_approval"].(map[string]string)
		if got["agent"] != "researcher" || got["session"] != "c1" || got["tool_call_id"] != "call_1" || got["tool_name"] != "danger" || got["decision"] != c.e.Decision {
			t.Errorf("%s: partial %v", c.name, p)
		}
	}
	var w delegate.Waiting
	n := 0
	for range delegate.MaxWaitingReports + 3 {
		if _, ok := w.Report(&pending, "researcher", "c1"); ok {
			n++
		}
	}
	if n != delegate.MaxWaitingReports {
		t.Errorf("reported %d of %d, want %d", n, delegate.MaxWaitingReports+3, delegate.MaxWaitingReports)
	}
}
