package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet"
)

// defaultApproveTimeout bounds the wait for the orchestrator's answer to a
// decision when --timeout is not given.
const defaultApproveTimeout = 30 * time.Second

func checkApprove(m *Main, pos []string) error {
	if len(pos) != 3 {
		return fmt.Errorf("want <agent> <session> <call>, got %d argument(s)", len(pos))
	}
	if err := checkName("agent", pos[0]); err != nil {
		return err
	}
	if err := checkName("session", pos[1]); err != nil {
		return err
	}
	if pos[2] == "" {
		return errors.New("the tool call id is empty")
	}
	if m.Reject && m.Args != "" {
		return errors.New("--args edits a call that is approved; a rejection carries none")
	}
	return nil
}

// decisionPayload builds the JSON of a decision.
func decisionPayload(call string, approve bool, reason, args string) ([]byte, error) {
	d := map[string]any{"tool_call_id": call, "approve": approve}
	if reason != "" {
		d["reason"] = reason
	}
	if args != "" {
		var a map[string]any
		if err := json.Unmarshal([]byte(args), &a); err != nil || a == nil {
			return nil, fmt.Errorf("--args %q is not a JSON object: %v", args, err)
		}
		d["arguments"] = a
	}
	return json.Marshal(d)
}

// approve sends a decision on <prefix>.approve.<agent>.<session> as a
// request and fails with the orchestrator's error when it is not taken (no
// such call waits, it was decided already, the edit does not fit).
func (m *Main) approve(ctx context.Context) error {
	r, err := m.decide(ctx, m.pos[0], m.pos[1], m.pos[2], !m.Reject, m.Reason, m.Args)
	if err != nil {
		return err
	}
	if m.JSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(m.Stdout, string(b))
	} else {
		fmt.Fprintf(m.Stdout, "%s: %s (decision %s)\n", r.ToolCallID, r.Decision, r.DecisionID)
	}
	return nil
}

// decide sends one decision and returns the orchestrator's reply; a reply
// that says the decision was not taken is an error carrying its text.
func (m *Main) decide(ctx context.Context, agent, session, call string, approve bool, reason, args string) (*agentfleet.ApprovalReply, error) {
	data, err := decisionPayload(call, approve, reason, args)
	if err != nil {
		return nil, err
	}
	subject := m.subjects.Approve(agent, session)
	timeout := m.Timeout
	if timeout == 0 {
		timeout = defaultApproveTimeout
	}
	answer, err := m.conn.Request(ctx, subject, data, timeout)
	if err != nil {
		return nil, err
	}
	var r agentfleet.ApprovalReply
	if err := json.Unmarshal(answer, &r); err != nil {
		return nil, fmt.Errorf("the answer on %s is not a decision reply: %w", subject, err)
	}
	if !r.OK {
		return &r, fmt.Errorf("the decision was not taken: %s", r.Error)
	}
	return &r, nil
}
