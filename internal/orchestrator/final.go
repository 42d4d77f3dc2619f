package orchestrator

import (
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// A run's final message is kept packed (loop.PackMessage) once the run
// ended: it is read again only to answer a duplicate of its input, and as
// Go values it outweighs the rest of an idle session's record of the run.

// setFinal records the final message of r; s.mu held.
func (r *runInfo) setFinal(final *agentfleet.AssistantMessage) {
	if b, err := loop.PackMessage(final.RunID, final); err == nil {
		r.final, r.finalMsg = b, nil
		return
	}
	r.final, r.finalMsg = nil, final // cannot be packed: kept as it is
}

// ended reports whether r has ended; s.mu held.
func (r *runInfo) ended() bool { return r.final != nil || r.finalMsg != nil }

// finalMessage returns the final message of r, nil if it has not ended; a
// fresh copy each time it is kept packed. s.mu held.
func (r *runInfo) finalMessage() *agentfleet.AssistantMessage {
	if r.finalMsg != nil || r.final == nil {
		return r.finalMsg
	}
	m, err := loop.UnpackMessage(r.final)
	if err != nil {
		panic(err) // packed here: a bug, not input
	}
	return m.(*agentfleet.AssistantMessage)
}
