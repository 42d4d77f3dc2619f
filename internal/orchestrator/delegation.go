package orchestrator

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet/internal/a2aremote"
	"github.com/agentfleet/agentfleet/internal/delegate/asker"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/delegate"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// registerAsks adds the ask tool of every agent the profile lists.
func (a *agent) registerAsks() error {
	a.asks = map[string]string{}
	for _, target := range a.profile.Agents {
		t := delegate.Tool(target, a.profile.AskTimeout())
		if err := a.store.Register(t); err != nil {
			return fmt.Errorf("agents entry %s: %w", target, err)
		}
		a.asks[t.Name] = target
	}
	for _, r := range a.profile.RemoteAgents {
		t, err := a2aremote.Tool(r, a.profile.AskTimeout(), a2aremote.Limits{})
		if err != nil {
			return err
		}
		if err := a.store.Register(t); err != nil {
			return fmt.Errorf("remote_agents entry %s: %w", r.Name, err)
		}
	}
	return nil
}

// asksAgent reports whether m is an assistant message with a call of an
// ask tool (asks, by tool name) that may go out: it must be stored before
// the call does, although the call may run again, so that a run resumed
// after a crash asks again with the same tool call id (the same child
// session and message id) instead of having the model make a new call
// that would run a second child. The result of such a call may wait: the
// call run again is answered from the child's history.
func asksAgent(m agentfleet.Message, asks map[string]string) bool {
	a, ok := m.(*agentfleet.AssistantMessage)
	if !ok || len(asks) == 0 || a.StopReason == agentfleet.StopReasonLength {
		return false
	}
	for _, c := range a.ToolCalls() {
		if _, ok := asks[c.Name]; ok {
			return true
		}
	}
	return false
}

// originLocked records that run answers parent's call; s.mu held (or the
// session not yet visible, as in restore).
func (s *session) originLocked(run string, parent *agentfleet.Parent) {
	if s.origins == nil {
		s.origins = map[string]*agentfleet.Parent{}
	}
	s.origins[run] = parent
}

// origin returns the parent of run, nil for a client's run.
func (s *session) origin(run string) *agentfleet.Parent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.origins[run]
}

// delegating is the pipeline executor of a session: the calls of its ask
// tools go to the agents they ask, the others to the fleet (next).
type delegating struct {
	s    *session
	next pipeline.Executor
}

var _ pipeline.Executor = delegating{}

// Execute implements pipeline.Executor.
func (d delegating) Execute(ctx context.Context, prep *pipeline.Prepared, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
	if target, ok := d.s.serves().transfers[prep.Call.Name]; ok {
		return d.s.transfer(ctx, prep, target)
	}
	target, ok := d.s.serves().asks[prep.Call.Name]
	if !ok {
		return d.next.Execute(ctx, prep, progress)
	}
	return d.s.ask(ctx, prep, target, progress)
}

// ask runs one call of an ask tool: an ask of target's session
// (asker.Conn.Run), within the bounds of depth, cycles and the run's
// budgets.
func (s *session) ask(ctx context.Context, prep *pipeline.Prepared, target string, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
	o := s.o
	var chain []string
	if p := s.origin(prep.RunID); p != nil {
		chain = p.Chain
	}
	next, err := delegate.Check(chain, s.agent.profile.Name, target, o.cfg.MaxDelegationDepth)
	if err != nil {
		return nil, fmt.Errorf("Tool %s: %w", prep.Call.Name, err)
	}
	message, session, err := delegate.Args(prep.Call.Name, prep.Args)
	if err != nil {
		return nil, err
	}
	// The child inherits what the run has left of its budgets; with
	// nothing left it is not asked (loop.BudgetLeft).
	left, spent := loop.BudgetLeft(ctx)
	if spent != nil {
		return nil, fmt.Errorf("Tool %s: refused: agent %s was not asked, %s", prep.Call.Name, target, spent.Text())
	}
	parent := &agentfleet.Parent{Agent: s.agent.profile.Name, Session: s.name, RunID: prep.RunID, ToolCallID: prep.Call.ID, Chain: next, Budget: left}
	if session == "" {
		session = delegate.ChildSession(parent)
	}
	c := asker.Conn{NC: o.nc, Subjects: o.subjects, Log: o.log}
	return c.Run(ctx, asker.Ask{
		Tool: prep.Call.Name, Target: target, Session: session, Message: message,
		Parent: parent, Timeout: prep.Timeout, Every: o.cfg.AskAgain,
	}, progress)
}

// maxDepth is the bound of nested delegations.
func (o *Orchestrator) maxDepth() int {
	if o.cfg.MaxDelegationDepth > 0 {
		return o.cfg.MaxDelegationDepth
	}
	return delegate.DefaultMaxDepth
}

// admit refuses an ask whose parent headers claim a delegation too deep
// or a cycle (delegate.Admit).
func (o *Orchestrator) admit(agent string, m *agentfleet.UserMessage) error {
	if m == nil {
		return nil
	}
	return delegate.Admit(m.Parent, agent, o.maxDepth())
}
