package orchestrator

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/inputpolicy"
	"go.opentelemetry.io/otel/trace"
)

// delivery is in as the input policy sees it. scanned marks input read from
// the stream at load, which has no delivery of its own to settle.
func delivery(in *input.Inbound, scanned bool) inputpolicy.Delivery {
	d := inputpolicy.Delivery{
		Kind: inputpolicy.Kind(in.Kind), Agent: in.Agent, Session: in.Session,
		Seq: in.Seq, Count: in.Delivery, Durable: in.Durable(), Reply: in.HasReply(),
		Scanned: scanned, Reason: in.Reason,
	}
	if in.Message != nil {
		d.ID = in.Message.ID
	}
	if in.Kind == bus.KindAbort {
		d.At = time.Now().UTC() // the time of its reply
	}
	return d
}

// stateLocked is the session as the input policy sees delivery d; s.mu
// held. loading marks the stored input and the backlog that load hands to
// the loop it has just built: they are handled whatever happened to the
// session meanwhile (suspend waits for s.mu; a session evicted by a fenced
// write runs what it holds until it is suspended).
func (s *session) stateLocked(d inputpolicy.Delivery, loading bool) inputpolicy.State {
	st := inputpolicy.State{Taken: true, Loaded: true, Backlog: len(s.backlog), Limit: s.o.cfg.SessionQueue}
	if !loading {
		st.Evicted, st.Stopped, st.Loaded = s.evicted.Load(), s.stopped, s.loaded
	}
	if !st.Loaded || d.Kind == inputpolicy.Abort || d.Kind == inputpolicy.Decision {
		return st
	}
	if m := s.msgs.Get(d.ID); m != nil {
		st.Msg = inputpolicy.Message{Seen: true, Run: m.run, Ended: m.run != "" && s.hasEnded(m.run), Seq: m.seq, Delivered: m.delivered, Answered: m.answered, Replied: m.replied}
	}
	// The facts that cost a lock are asked only when Step reads them: the
	// queue for a new id, the lease for one already answered.
	if !st.Msg.Seen {
		st.Queued = s.loop.Queued()
	}
	if st.Msg.Ended {
		st.Leased = s.holds() == nil
	}
	return st
}

// stepLocked carries out the input policy for in; s.mu held. It reports
// false when the session left memory meanwhile, so the caller takes a fresh
// one.
func (s *session) stepLocked(in *input.Inbound, scanned, loading bool) bool {
	d := delivery(in, scanned)
	d.Agent, d.Session = s.agent.profile.Name, s.name
	st, acts := inputpolicy.Step(s.stateLocked(d, loading), d)
	for _, a := range acts {
		switch a.Op {
		case inputpolicy.Retake:
			return false
		case inputpolicy.Hold:
			s.backlog = append(s.backlog, in)
		case inputpolicy.Gate:
			s.gateLocked().Decide(in.Decision, s.answerDecision(in, d))
		case inputpolicy.AbortRun:
			for _, a := range inputpolicy.Aborted(d, s.loop.Abort(a.Reason)) {
				s.perform(in, a)
			}
		case inputpolicy.Wait:
			m := s.msg(d.ID)
			m.tickets = append(m.tickets, ticket{in: in, silent: a.Silent})
			s.waiting++
		case inputpolicy.Start:
			m := s.msg(d.ID)
			if in.Trace.IsValid() {
				sc := in.Trace
				m.trace = &sc
			}
			ctx := context.Background()
			if in.Trace.IsValid() {
				ctx = trace.ContextWithRemoteSpanContext(ctx, in.Trace)
			}
			if a.Steer {
				s.loop.SteerContext(ctx, in.Message)
			} else {
				s.loop.SendContext(ctx, in.Message)
			}
		case inputpolicy.Answer:
			in.Reply(s.runs.Get(a.Run).finalMessage())
		case inputpolicy.Publish:
			s.o.pub.PublishOut(s.agent.profile.Name, s.name, s.runs.Get(a.Run).finalMessage())
		default:
			s.perform(in, a)
		}
	}
	if st.Msg.Seen {
		m := s.msg(d.ID)
		m.seq, m.delivered, m.answered, m.replied = st.Msg.Seq, st.Msg.Delivered, st.Msg.Answered, st.Msg.Replied
	}
	return true
}

// perform carries out the actions that touch only the delivery itself (and
// the metrics), wherever they come from.
func (s *session) perform(in *input.Inbound, a inputpolicy.Action) {
	switch a.Op {
	case inputpolicy.Ack:
		if err := in.Ack(s.fence); err != nil {
			s.o.log.Info("input not acknowledged: the session is no longer this orchestrator's", "agent", s.agent.profile.Name, "session", s.name, "err", err)
		}
	case inputpolicy.Nak:
		in.Nak()
	case inputpolicy.Retry:
		in.Retry(a.Err)
	case inputpolicy.Reject:
		in.Reject(a.Err)
	case inputpolicy.Count:
		s.o.observeInput(a.Outcome)
	case inputpolicy.ReplyAborted:
		in.Reply(&agentfleet.AssistantMessage{
			Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{},
			StopReason: agentfleet.StopReasonAborted, ErrorMessage: a.Reason, Timestamp: a.At,
		})
	default:
		s.o.log.Error("input action not carried out here", "agent", s.agent.profile.Name, "session", s.name, "action", a.String())
	}
}
