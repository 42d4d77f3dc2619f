package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/delegate"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// A handoff: a call of transfer_to_<agent> stores a handoff record in the
// session's history, emits session.handoff and ends the run with a final
// message that says so. The session keeps its name, its subjects and its
// history; once its run is over and nothing waits on it, it leaves memory,
// and its next message loads it again with the agent that the stored
// records name (delegate.Serving) serving it: that agent's model, prompt and
// tools, over the conversation as it stands.

// errNoHistory refuses a handoff of an orchestrator without JetStream: the
// handoff would last only as long as the session stays in memory.
var errNoHistory = errors.New("a handoff is stored in the session's history, and this orchestrator runs without JetStream")

// registerTransfers adds the transfer tool of every agent the profile may
// hand over to.
func (a *agent) registerTransfers() error {
	a.transfers = map[string]string{}
	for _, target := range a.profile.Handoffs {
		t := delegate.TransferTool(target)
		if err := a.store.Register(t); err != nil {
			return fmt.Errorf("handoffs entry %s: %w", target, err)
		}
		a.transfers[t.Name] = target
	}
	return nil
}

// serves returns the agent that serves the session: the one it is
// addressed to, unless its history handed it over.
func (s *session) serves() *agent {
	if s.serving != nil {
		return s.serving
	}
	return s.agent
}

// servingFrom sets the agent that serves the session from its stored
// handoffs, those of runs that ended (a run interrupted while it handed over
// resumes with the agent that made it, and hands over again); s.mu held or
// the session not yet visible, after its records are restored.
func (s *session) servingFrom(hs []history.Record) {
	var targets []string
	for _, r := range hs {
		if r.Retained != nil || s.hasEnded(r.RunID) { // a cut carries only ended runs'
			targets = append(targets, r.Handoff.To)
		}
	}
	name, skipped := delegate.Serving(s.agent.profile.Name, targets, func(n string) bool { return s.o.agents[n] != nil })
	for _, to := range skipped {
		s.o.log.Warn("handoff to an agent this orchestrator does not run: passed over", "agent", s.agent.profile.Name, "session", s.name, "to", to)
	}
	if name != s.agent.profile.Name {
		s.serving = s.o.agents[name]
	}
}

// transfer runs one call of a transfer tool: the handoff is stored before
// the call's result, so that the run ends only once the next messages are
// sure to go to target.
func (s *session) transfer(ctx context.Context, prep *pipeline.Prepared, target string) (*agentfleet.ToolResult, error) {
	reason, err := delegate.TransferArgs(prep.Call.Name, prep.Args)
	if err != nil {
		return nil, err
	}
	if s.writer == nil {
		return nil, fmt.Errorf("Tool %s: refused: %w", prep.Call.Name, errNoHistory)
	}
	from := s.serves().profile.Name
	h := &history.Handoff{From: from, To: target, Reason: reason, ToolCallID: prep.Call.ID}
	if _, err := s.writer.AppendHandoff(s.ctx, prep.RunID, h); err != nil {
		return nil, s.fenced(err)
	}
	s.mu.Lock()
	if s.handedOver == nil {
		s.handedOver = map[string]bool{}
	}
	s.handedOver[prep.RunID] = true
	s.mu.Unlock()
	loopSink{s}.Emit(&agentfleet.Event{
		Type: agentfleet.EventSessionHandoff, Agent: s.agent.profile.Name, Session: s.name, RunID: prep.RunID,
		Time: time.Now().UTC(), ToolCallID: prep.Call.ID, From: from, To: target, Reason: reason,
	})
	return delegate.TransferResult(from, target, reason), nil
}

// handoffSettleWait bounds how long a message waits for the run that
// handed its session over to leave the loop, after its end is out.
const handoffSettleWait = 2 * time.Second

// handedOverIdle reports whether the session handed itself over and may
// now leave memory, to be loaded again for a message with the agent that
// serves it: loaded, the run that handed over ended, no run, nothing
// waiting. The run's final message goes out a moment before the loop lets
// go of it, so a message that comes just after it waits for that, within
// handoffSettleWait; a run still going (a transfer beside other calls)
// is not waited for, and a message for it queues behind it, with the agent
// that handed over.
func (s *session) handedOverIdle() bool {
	s.mu.Lock()
	ended, l := s.handoffEnded && s.loaded, s.loop
	s.mu.Unlock()
	if !ended || l == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(s.ctx, handoffSettleWait)
	defer cancel()
	if l.Wait(ctx) != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting == 0 && len(s.backlog) == 0 && !s.loop.Running()
}
