package loop

import "github.com/agentfleet/agentfleet"

// Sink receives what a session's loop puts out: every lifecycle event, and
// the outcome of every run. The orchestrator implements it to publish the
// events and to answer whoever waits on a run; Events adapts a plain event
// sink.
//
// Its methods are called with no session lock held. Emit is called one
// event at a time, in sequence order, and the outcome of a run after its
// last event.
type Sink interface {
	// Emit receives a lifecycle event, its envelope filled in.
	Emit(e *agentfleet.Event)
	// RunEnded receives the final message of a run after its run.end event
	// was emitted, so that an answer never overtakes the event.
	RunEnded(final *agentfleet.AssistantMessage)
	// RunSuspended is told that run runID stopped without ending (after its
	// run.suspended event), and why.
	RunSuspended(runID string, err error)
}

// Events returns a Sink that hands every event to es and takes no notice
// of run outcomes (the channels Send returns carry the final messages).
func Events(es agentfleet.EventSink) Sink { return eventSink{es} }

type eventSink struct{ agentfleet.EventSink }

func (eventSink) RunEnded(*agentfleet.AssistantMessage) {}
func (eventSink) RunSuspended(string, error)            {}

// discard is the Sink of a Session configured without one.
type discard struct{}

func (discard) Emit(*agentfleet.Event)                {}
func (discard) RunEnded(*agentfleet.AssistantMessage) {}
func (discard) RunSuspended(string, error)            {}
