package delegate

import "github.com/agentfleet/agentfleet"

// MaxWaitingReports bounds the approvals of its child that one call of an
// ask tool reports as its progress.
const MaxWaitingReports = 4

// Waiting counts the approvals of a child reported by one call of an ask
// tool; its zero value has reported none.
type Waiting struct{ reported int }

// Report returns the partial that the call asking agent in session reports
// for e, an event of its child's, and whether to report it: only a
// tool.approval event of that agent and session (a pending call, or its
// decision), and at most MaxWaitingReports of them. The partial names the
// child's agent, session, waiting call and tool, and the decision.
func (w *Waiting) Report(e *agentfleet.Event, agent, session string) (map[string]any, bool) {
	if e == nil || e.Type != agentfleet.EventToolApproval || e.Agent != agent || e.Session != session ||
		e.ToolCallID == "" || w.reported >= MaxWaitingReports {
		return nil, false
	}
	w.reported++
	return map[string]any{"child_approval": map[string]string{
		"agent": agent, "session": session, "tool_call_id": e.ToolCallID, "tool_name": e.ToolName, "decision": e.Decision,
	}}, true
}
