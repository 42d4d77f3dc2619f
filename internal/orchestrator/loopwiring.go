package orchestrator

import (
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
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

// EndRun implements loop.Store (session.ended).
func (l loopStore) EndRun(final *agentfleet.AssistantMessage) error { return l.s.ended(final) }

// Unexecuted implements loop.Store: a call that waits for a person's
// approval, or was refused, never ran.
func (l loopStore) Unexecuted(callID string) bool { return l.s.gate.Unexecuted(callID) }

// loopSink is the loop.Sink of one session: events go to the orchestrator's
// event sink (sink.go), the end of a run answers the deliveries waiting on
// it, and a suspension is logged. It is made once, when the session's loop
// is built.
type loopSink struct {
	agentfleet.EventSink
	s *session
}

var _ loop.Sink = loopSink{}

// RunEnded implements loop.Sink (session.answer).
func (l loopSink) RunEnded(final *agentfleet.AssistantMessage) { l.s.answer(final) }

// RunSuspended implements loop.Sink (session.suspended).
func (l loopSink) RunSuspended(runID string, err error) { l.s.suspended(runID, err) }
