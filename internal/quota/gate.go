package quota

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet"
)

// Gate admits the attempts of model calls under a shared quota. The model
// adapter (package llm) asks it before each attempt and reports the
// attempt's end to the Ticket; package bus/limiter implements it on NATS.
type Gate interface {
	// Admit blocks until the attempt of c may go, and returns its ticket;
	// it fails when ctx ends first. A model the gate knows nothing of is
	// admitted at once.
	Admit(ctx context.Context, c Call) (Ticket, error)
}

// Call is one attempt that asks to go.
type Call struct {
	Model, Agent, Session, Priority string
	// Tokens is the attempt's estimated tokens (loop.Request's estimate).
	Tokens int
	// Notify, if set, receives the events the gate has about the call
	// (model.waiting), for the call's run: the model adapter passes them
	// to the loop. Optional.
	Notify func(*agentfleet.Event)
}

// Ticket is an admitted attempt. Done must be called once, when the
// attempt ended.
type Ticket interface {
	// Done reports the attempt's usage (nil when none came), its HTTP
	// status (0 when no response came) and the wait the provider asked
	// for with Retry-After (0: none), which pauses the model fleet-wide.
	Done(usage *agentfleet.Usage, status int, retryAfter time.Duration)
}
