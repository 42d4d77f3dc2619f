package agentfleet

import "time"

// Approval decisions, as the tool.approval event and the stored records
// name them.
const (
	// ApprovalPending: the call waits for a person.
	ApprovalPending = "pending"
	// ApprovalApproved: the call runs, with the decision's arguments if it
	// carried an edit.
	ApprovalApproved = "approved"
	// ApprovalRejected: the call gets an error result carrying the reason.
	ApprovalRejected = "rejected"
	// ApprovalTimedOut: no decision came before the deadline; the call gets
	// an error result saying it was not approved in time.
	ApprovalTimedOut = "timed_out"
)

// ApprovalRequest is a tool call that waits for a person's decision: what
// the tool.approval event announces and what the session's history stores,
// so that whichever orchestrator owns the session waits for it.
type ApprovalRequest struct {
	ToolCallID  string         `json:"tool_call_id"`
	ToolName    string         `json:"tool_name"`
	Arguments   map[string]any `json:"arguments,omitempty"`
	Annotations Annotations    `json:"annotations"`
	Requested   time.Time      `json:"requested"`
	Deadline    time.Time      `json:"deadline"`
}

// ApprovalDecision is a person's answer to an ApprovalRequest, as published
// on <prefix>.approve.<agent>.<session>; ID, Decided and TimedOut are filled
// in by the orchestrator that takes it (TimedOut for the decision it makes
// itself when the deadline passes).
type ApprovalDecision struct {
	ToolCallID string `json:"tool_call_id"`
	Approve    bool   `json:"approve"`
	Reason     string `json:"reason,omitempty"`
	// Arguments, if set, replace the call's arguments (an edit); they are
	// validated against the tool's schema again.
	Arguments map[string]any `json:"arguments,omitempty"`
	// ID names the decision: the publisher's Nats-Msg-Id, or the input
	// stream sequence it was stored under ("js-<seq>").
	ID       string    `json:"id,omitempty"`
	Decided  time.Time `json:"decided,omitzero"`
	TimedOut bool      `json:"timed_out,omitempty"`
}

// Outcome returns the decision as one of ApprovalApproved, ApprovalRejected
// or ApprovalTimedOut.
func (d *ApprovalDecision) Outcome() string {
	switch {
	case d.TimedOut:
		return ApprovalTimedOut
	case d.Approve:
		return ApprovalApproved
	default:
		return ApprovalRejected
	}
}

// ApprovalReply answers a decision published as a request. OK says the
// decision was taken and is stored; otherwise Error says why not, and, when
// the call was decided already, Decision and DecisionID name the winner.
type ApprovalReply struct {
	OK         bool   `json:"ok"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	Decision   string `json:"decision,omitempty"`
	DecisionID string `json:"decision_id,omitempty"`
	Error      string `json:"error,omitempty"`
}
