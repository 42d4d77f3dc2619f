package orchestrator

import (
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
)

// loopStore is the loop.Store of one session: the session's history writer,
// through the session's index of message ids and runs, and its approval
// gate for the calls known never to have run. It is made once, when the
// session's loop is built.
type loopStore struct{ s *session }

var _ loop.Store = loopStore{}

// Append implements loop.Store (session.stored).
func (l loopStore) Append(runID string, m agentfleet.Message) error { return l.s.stored(runID, m) }

// AppendSummary implements loop.Store (session.summarized).
func (l loopStore) AppendSummary(runID string, sum *agentfleet.ContextSummary) error {
	return l.s.summarized(runID, sum)
}

// TrimAfter implements loop.Trimmer (session.trimAfter).
func (l loopStore) TrimAfter(final *agentfleet.AssistantMessage) (loop.Trim, bool) {
	return l.s.trimAfter(final)
}

// EndRun implements loop.Store (session.ended).
func (l loopStore) EndRun(final *agentfleet.AssistantMessage) error { return l.s.ended(final) }

// Unexecuted implements loop.Store: a call that waits for a person's
// approval, or was refused, never ran.
func (l loopStore) Unexecuted(callID string) bool {
	l.s.mu.Lock()
	g := l.s.gate
	l.s.mu.Unlock()
	return g != nil && g.Unexecuted(callID)
}

// loopSink is the loop.Sink of one session: events go to the orchestrator's
// event sink (sink.go), the end of a run answers the deliveries waiting on
// it, and a suspension is logged. It is made once, when the session's loop
// is built, and is the session's pointer alone, so that it costs nothing
// more per session.
type loopSink struct{ s *session }

var _ loop.Sink = loopSink{}

// Emit implements agentfleet.EventSink: the agent's sink, shared by its
// sessions.
// A session handed over to another agent keeps its events on the subjects
// of the agent it is addressed to.
// Events go out only while the partition's fence holds, as appends do: a
// deposed orchestrator (past its lease by its own clock, or another owns
// the partition) publishes none to outlive a delete; a lease in doubt does.
func (l loopSink) Emit(e *agentfleet.Event) {
	if l.s.erased.Load() {
		return
	}
	if err := l.s.owner.Check(l.s.fence); err != nil && isFenced(err) {
		return
	}
	a := l.s.serves()
	e.Agent = l.s.agent.profile.Name
	a.events.Emit(e)
}

// RunEnded implements loop.Sink (session.answer).
func (l loopSink) RunEnded(final *agentfleet.AssistantMessage) { l.s.answer(final) }

// RunSuspended implements loop.Sink (session.suspended).
func (l loopSink) RunSuspended(runID string, err error) { l.s.suspended(runID, err) }

// template returns the loop template of the agent's sessions, made at the
// first session (after Start: it holds the recoverer of the fleet's
// outcomes): what a session's loop has in common with every other session
// of its agent is held once, not a million times.
func (a *agent) template(o *Orchestrator) *loop.Template {
	a.tmplOnce.Do(func() {
		a.events = o.sink()
		a.tmpl = a.newTemplate(o, a.profile.Model, a.model)
	})
	return a.tmpl
}

// newTemplate makes a loop template of the agent's profile answered by
// model, named name.
func (a *agent) newTemplate(o *Orchestrator, name string, model loop.Model) *loop.Template {
	p := &a.profile
	var nested func([]*agentfleet.Tool) (allowed, gated []string)
	if pol := p.Approval(); pol.Enabled() {
		// A scripted tool's call_tool has no decision to wait for:
		// it reaches only the tools that need none.
		nested = pol.Nested
	}
	return loop.NewTemplate(loop.Config{
		Agent: p.Name, Model: model, ModelName: name,
		SystemPrompt: p.SystemPrompt, Tools: a.store, MaxTurns: p.MaxTurns,
		Context: p.Context(o.window(name)), Budget: p.Budget(),
		Priority: p.Priority, AgentCost: o.agentCost(p.Name),
		Pipeline: pipeline.Config{
			Mode: pipeline.Mode(p.Mode), MaxParallel: p.MaxParallel, DefaultTimeout: p.DefaultToolTimeout(),
			Before: o.cfg.Before, After: o.cfg.After,
			TraceContent: o.cfg.TraceContent, Nested: nested,
			MaxProgressBytes: maxProgressBytes(o.cfg.DurableConfig.EventsMaxBytes),
		},
		Tracer:          o.cfg.Tracer,
		TraceAttributes: []attribute.KeyValue{tracing.Orchestrator.String(o.id)},
		Recover:         o.recoverer(p.DefaultToolTimeout()),
	})
}

// agentCost returns the loop's AgentCost of the agent name, nil when the
// orchestrator has no source of it.
func (o *Orchestrator) agentCost(name string) func() float64 {
	f := o.cfg.AgentCost
	if f == nil {
		return nil
	}
	return func() float64 { return f(name) }
}
