package inputpolicy

import "time"

// Kind is the kind of an input message, spelled as on the wire.
type Kind string

// The input kinds.
const (
	// In is a message for the session's next run.
	In Kind = "in"
	// Ask is a message whose run's final message is its answer.
	Ask Kind = "ask"
	// Steer is a message for the active run, or the next one if none.
	Steer Kind = "steer"
	// Abort ends the active run.
	Abort Kind = "abort"
	// Decision is a person's decision on a call waiting for approval.
	Decision Kind = "approve"
)

// Delivery is one input message as it reached the orchestrator.
type Delivery struct {
	Kind Kind
	// Agent and Session name the session, for the errors actions carry.
	Agent, Session string
	// ID is the message id of in, ask and steer (never empty: the runner
	// names a message without one before Step).
	ID string
	// Seq is the input stream sequence of durable input; 0 for core input.
	Seq uint64
	// Count is the transport's delivery count (1 for the first; 0 for core
	// input). Step does not decide by it: the transport bounds failed
	// handlings itself, and redeliveries after a crash or a handover are not
	// failures.
	Count uint64
	// Durable: the delivery is settled by Ack or Nak.
	Durable bool
	// Reply: someone waits for an answer (an ask, an abort or a decision
	// sent as a request, a relayed ask).
	Reply bool
	// Scanned: read from the input stream when the session was loaded, not
	// delivered by the consumer; it has no delivery of its own to settle.
	Scanned bool
	// Reason is the reason of an abort.
	Reason string
	// At is when the delivery is handled, for the answers that carry a time.
	At time.Time
}
