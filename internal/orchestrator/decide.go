package orchestrator

// Action is what the orchestrator does with one input message of a session,
// given what the session's stored history and memory say of its id.
type Action int

// The actions of Decide.
const (
	// Queue: the id is new; the message waits for a run of its own (or,
	// steering, enters the active one).
	Queue Action = iota
	// Attach: a run has taken (or will take) the message: it is queued,
	// running, or was interrupted and is being resumed. The delivery is
	// settled, and an ask answered, when that run ends.
	Attach
	// Answered: the run that took the message ended. The delivery is
	// settled at once and an ask gets the stored final message.
	Answered
)

func (a Action) String() string {
	switch a {
	case Queue:
		return "queue"
	case Attach:
		return "attach"
	case Answered:
		return "answered"
	}
	return "unknown"
}

// Known is what a session knows of one message id.
type Known struct {
	// Seen: a message with this id is queued or in the history.
	Seen bool
	// RunID is the run that took it ("" while it is queued).
	RunID string
	// Ended: that run has its end record.
	Ended bool
	// Seq is the input stream sequence of the message that took the id, if
	// this process knows it (0 otherwise).
	Seq uint64
}

// Arrival is one delivery of an input message.
type Arrival struct {
	// Ask: core request-reply input; its answer goes to its reply subject.
	Ask bool
	// Seq is the input stream sequence of durable input; 0 for core input.
	Seq uint64
	// Scanned: read from the input stream when the session was loaded, not
	// delivered by the consumer; it has no delivery to settle.
	Scanned bool
}

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Replay: publish the stored final message on the session's out
	// subject again, for a client that sent the message anew (another
	// stream message with an id already answered, not a redelivery).
	Replay bool
}

// Decide chooses what to do with a message whose id the session knows as k.
// It is the whole input-handling policy of a session, as a pure function:
//
//   - a new id is queued: input is taken in the order it arrives, behind
//     any interrupted run, which the session resumes when it is loaded;
//   - a redelivery of a message whose run is queued, running or resumed, or
//     another copy of it, attaches to that run: one run, settled once;
//   - a message whose run ended is answered from the store and settled.
func Decide(k Known, a Arrival) Decision {
	switch {
	case !k.Seen:
		return Decision{Action: Queue}
	case !k.Ended:
		return Decision{Action: Attach}
	default:
		again := !a.Ask && !a.Scanned && a.Seq != 0 && k.Seq != 0 && a.Seq != k.Seq
		return Decision{Action: Answered, Replay: again}
	}
}
