package pipeline

import (
	"sync"

	"github.com/agentfleet/agentfleet"
)

// started is the state of a prepared call's tool.start event, which the
// pipeline publishes as soon as the call's request is on its way (Sent),
// and at the latest before any other event of the call: its first
// tool.update, or the end of Execute.
type started struct {
	mu   sync.Mutex
	p    *Pipeline // nil: a call that Run does not run publishes no tool.start
	out  bool      // tool.start is out
	done bool      // Execute returned: progress is dropped
	// bound is what the call's tool.update events spent of
	// Config.MaxProgressBytes (its limit 0 until the first update);
	// argsSize the JSON size of the arguments every tool.update carries,
	// measured at the first update.
	bound    progressBound
	argsSize int64
}

// Sent tells the pipeline that the call's request is on its way to a
// worker: its tool.start is published then, while the worker runs the
// call, instead of before the request. Executors call it; it is safe to
// call more than once, and concurrently with progress. An executor that
// never calls it loses nothing: tool.start still comes first.
func (pr *Prepared) Sent() {
	s := &pr.start
	s.mu.Lock()
	defer s.mu.Unlock()
	s.announce(pr)
}

// announce publishes tool.start, once. Under mu.
func (s *started) announce(pr *Prepared) {
	if s.p != nil && !s.out {
		s.out = true
		s.p.emitStart(pr.Call)
	}
}

// progress publishes a partial result as tool.update, after the call's
// tool.start and never after Execute returned, so that no tool.update
// follows the call's tool.end.
func (pr *Prepared) progress(p *Pipeline, partial any) {
	s := &pr.start
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.announce(pr)
	if s.bound.limit == 0 {
		s.bound.limit, s.argsSize = p.cfg.MaxProgressBytes, jsonSize(pr.Args)
		if s.bound.limit <= 0 {
			s.bound.limit = DefaultMaxProgressBytes
		}
	}
	if !s.bound.take(updateSize(partial, s.argsSize)) {
		return
	}
	p.emit(&agentfleet.Event{
		Type: agentfleet.EventToolUpdate, ToolCallID: pr.Call.ID, ToolName: pr.Call.Name,
		Arguments: pr.Args, Partial: partial,
	})
}

// executed marks the end of Execute: tool.start is out, one tool.update
// tells how many were dropped past the call's bound, if any was, and later
// partial results are dropped.
func (pr *Prepared) executed() {
	s := &pr.start
	s.mu.Lock()
	defer s.mu.Unlock()
	s.announce(pr)
	if n := s.bound.droppedNotice(); n != nil && s.p != nil {
		s.p.emit(&agentfleet.Event{
			Type: agentfleet.EventToolUpdate, ToolCallID: pr.Call.ID, ToolName: pr.Call.Name, Partial: n,
		})
	}
	s.done = true
}

func (p *Pipeline) emitStart(call agentfleet.ToolCall) {
	p.emit(&agentfleet.Event{
		Type: agentfleet.EventToolStart, ToolCallID: call.ID, ToolName: call.Name, Arguments: call.Arguments,
	})
}
