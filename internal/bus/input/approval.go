package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
)

// MaxDecisionBytes bounds the payload of one decision.
const MaxDecisionBytes = 1 << 20

// ParseDecision decodes the payload of an approve message:
// {"tool_call_id": "...", "approve": true|false, "reason": "...",
// "arguments": {...}}. tool_call_id and approve are required, arguments
// must be an object, and no other field is allowed. msgID (the
// Nats-Msg-Id header) becomes the decision's id. The error says what is
// wrong.
func ParseDecision(data []byte, msgID string) (*agentfleet.ApprovalDecision, error) {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		return nil, errors.New(`decision payload is empty: send {"tool_call_id": "...", "approve": true|false}`)
	case len(trimmed) > MaxDecisionBytes:
		return nil, fmt.Errorf("decision payload of %d bytes exceeds the limit of %d", len(trimmed), MaxDecisionBytes)
	case !utf8.Valid(trimmed):
		return nil, errors.New("decision payload is not valid UTF-8")
	}
	var p struct {
		ToolCallID string          `json:"tool_call_id"`
		Approve    *bool           `json:"approve"`
		Reason     string          `json:"reason"`
		Arguments  json.RawMessage `json:"arguments"`
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf(`decision payload is not a valid object {"tool_call_id": ..., "approve": ..., "reason": ..., "arguments": ...}: %w`, err)
	}
	if dec.More() {
		return nil, errors.New("decision payload has data after its JSON object")
	}
	if p.ToolCallID == "" {
		return nil, errors.New(`decision payload has no "tool_call_id"`)
	}
	if p.Approve == nil {
		return nil, errors.New(`decision payload has no "approve": say true or false`)
	}
	d := &agentfleet.ApprovalDecision{ToolCallID: p.ToolCallID, Approve: *p.Approve, Reason: p.Reason, ID: msgID}
	if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		if a[0] != '{' {
			return nil, errors.New(`decision payload: "arguments" must be a JSON object`)
		}
		if err := json.Unmarshal(a, &d.Arguments); err != nil {
			return nil, fmt.Errorf(`decision payload: "arguments": %w`, err)
		}
		if !d.Approve {
			return nil, errors.New(`decision payload: "arguments" edit a call that is approved; a rejection carries none`)
		}
	}
	return d, nil
}

// ReplyDecision answers an approve message published as a request. It is a
// no-op for other kinds and for messages without a reply subject.
func (in *Inbound) ReplyDecision(r *agentfleet.ApprovalReply) {
	if in.decisionReply != nil {
		in.decisionReply(r)
	}
}
