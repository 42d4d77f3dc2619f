package orchestrator

import (
	"context"

	"github.com/agentfleet/agentfleet/internal/inputpolicy"
)

// toolFenced reacts to a worker's refusal of one of the session's tool
// calls as fenced (toolrpc.ErrFenced): a later claim of the session's
// partition has reached the fleet, so this orchestrator owns the session
// no more, whatever its partition table says yet. As on a fenced history
// write, the session's run stops without ending, the session is dropped
// from memory, and the deliveries waiting on it are left for the next
// owner; the call is not sent again from here. It may be called from
// several calls at once; the first one suspends.
func (s *session) toolFenced(err error) {
	if context.Cause(s.ctx) != nil {
		return // suspended already, or closing
	}
	// Cancelled here, not only in suspend: no store of the run may go on
	// meanwhile, and a second refusal finds the session stopped.
	s.cancel(err)
	s.o.log.Warn("tool call refused as fenced: session dropped to be loaded by its owner", "agent", s.agent.profile.Name, "session", s.name, "fence", s.fence.String(), "err", err)
	s.o.forget(s)
	go s.suspend(err, inputpolicy.RetryLater)
}
