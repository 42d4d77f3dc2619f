package orchestrator

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/approval"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/inputpolicy"
)

// gateLocked returns the session's approval gate, made at the first need
// of it: a session of an agent whose calls need no approval has none until
// a decision or a stored request names one of its calls. s.mu held, or
// the session still loading.
func (s *session) gateLocked() *approval.Gate {
	if s.gate == nil {
		s.gate = s.newGate()
	}
	return s.gate
}

// newGate returns the session's approval gate: its requests and decisions
// are stored in the session's history, fenced like every other record, and
// an edit is validated against the tool's schema.
func (s *session) newGate() *approval.Gate {
	a := s.serves()
	return approval.New(approval.Config{
		Policy: a.profile.Approval(),
		StoreRequest: func(_ context.Context, runID string, r *agentfleet.ApprovalRequest) error {
			if s.writer == nil {
				return nil
			}
			if _, err := s.writer.AppendApproval(s.ctx, runID, r); err != nil {
				return s.fenced(err)
			}
			return nil
		},
		StoreDecision: func(_ context.Context, runID string, d *agentfleet.ApprovalDecision) error {
			if s.writer == nil {
				return nil
			}
			if _, err := s.writer.AppendDecision(s.ctx, runID, d); err != nil {
				return s.fenced(err)
			}
			return nil
		},
		Validate: a.store.ValidateArguments,
	})
}

// answerDecision returns how a decision's delivery is answered, as the
// input policy decides (inputpolicy.Decided): the reply to its publisher
// (an error one also as an error event), then the delivery settled, or the
// delivery left to come again.
func (s *session) answerDecision(in *input.Inbound, d inputpolicy.Delivery) approval.Answer {
	return func(r *agentfleet.ApprovalReply, final bool) {
		st := inputpolicy.State{Leased: s.holds() == nil}
		for _, a := range inputpolicy.Decided(st, d, inputpolicy.Verdict{OK: r.OK, Final: final, Error: r.Error}) {
			switch a.Op {
			case inputpolicy.ReplyDecision:
				in.ReplyDecision(r)
			case inputpolicy.Emit:
				s.o.pub.Emit(&agentfleet.Event{
					Type: agentfleet.EventError, Agent: s.agent.profile.Name, Session: s.name, Time: time.Now().UTC(),
					ToolCallID: r.ToolCallID, Subject: in.Subject, ErrorMessage: a.Err.Error(),
				})
			default:
				s.perform(in, a)
			}
		}
	}
}
