package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/approval"
	"github.com/agentfleet/agentfleet/internal/bus"
)

// newGate returns the session's approval gate: its requests and decisions
// are stored in the session's history, fenced like every other record, and
// an edit is validated against the tool's schema.
func (s *session) newGate() *approval.Gate {
	a := s.agent
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

// answerDecision returns how a decision's delivery is answered: the reply
// to its publisher (an error one also as an error event), then the
// delivery settled. A decision that could not act here is left to be
// delivered again (to this session's next owner, or to hear why not).
func (s *session) answerDecision(in *bus.Inbound) approval.Answer {
	return func(r *agentfleet.ApprovalReply, final bool) {
		if !final && in.Durable() {
			in.Done(false)
			return
		}
		in.ReplyDecision(r)
		if !r.OK {
			s.o.pub.Emit(&agentfleet.Event{
				Type: agentfleet.EventError, Agent: s.agent.profile.Name, Session: s.name, Time: time.Now().UTC(),
				ToolCallID: r.ToolCallID, Subject: in.Subject, ErrorMessage: fmt.Sprintf("decision rejected: %s", r.Error),
			})
		}
		if s.o.LeaseErr() == nil {
			in.Done(true)
		}
	}
}
