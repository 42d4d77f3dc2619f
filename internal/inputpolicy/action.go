package inputpolicy

import (
	"fmt"
	"time"
)

// Op is what an action does.
type Op int

// The operations of actions. Each says what the runner does with the
// delivery the action is for.
const (
	// Take: take the session of the delivery and Step again with its state;
	// Load says to load it if it is not in memory (an abort takes only one
	// that is).
	Take Op = iota
	// Retake: the session left memory meanwhile; take a fresh one and Step
	// again.
	Retake
	// Hold: keep the delivery until the session is loaded, then Step again.
	Hold
	// Start: give the message to the loop, for a run of its own, or, Steer,
	// to the active run. The delivery's trace context goes with it.
	Start
	// Wait: the delivery waits on the run of its message id, and is
	// answered and settled when that run ends (Ended); Silent, it is only
	// settled: another delivery of the same stream message has the answer.
	Wait
	// Answer: reply with the stored final message of Run.
	Answer
	// Publish: publish the stored final message of Run on the session's out
	// subject again.
	Publish
	// AbortRun: end the active run with Reason; the loop's word goes to
	// Aborted.
	AbortRun
	// ReplyAborted: reply that the run was aborted with Reason, at At.
	ReplyAborted
	// Gate: hand the decision to the approval gate; its answer goes to
	// Decided.
	Gate
	// ReplyDecision: reply with the gate's answer to the decision.
	ReplyDecision
	// Emit: publish an error event saying Err.
	Emit
	// Ack: settle durable input as handled.
	Ack
	// Nak: have durable input delivered again at once (a handover; not a
	// failure).
	Nak
	// Retry: a failure that can pass; durable input comes again after a
	// backoff, an ask hears to try again.
	Retry
	// Reject: input that can never be handled; it is answered with Err and
	// terminated.
	Reject
	// Count: count the delivery's outcome (Outcome) in the input metrics.
	Count
)

var opNames = [...]string{
	Take: "take", Retake: "retake", Hold: "hold", Start: "start", Wait: "wait",
	Answer: "answer", Publish: "publish", AbortRun: "abort", ReplyAborted: "reply aborted",
	Gate: "gate", ReplyDecision: "reply decision", Emit: "emit", Ack: "ack", Nak: "nak",
	Retry: "retry", Reject: "reject", Count: "count",
}

// String names the op as the table tests spell it ("take", "ack", ...).
func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Action is one thing the runner does for a delivery. Only the fields of
// its Op are set.
type Action struct {
	Op Op
	// Load: for Take, load the session if it is not in memory.
	Load bool
	// Steer: for Start, the message steers the active run.
	Steer bool
	// Silent: for Wait, the delivery is not answered when the run ends.
	Silent bool
	// Run: for Answer and Publish, the run whose final message is meant.
	Run string
	// Reason: for AbortRun and ReplyAborted.
	Reason string
	// At: for ReplyAborted, the time of the reply.
	At time.Time
	// Err: for Emit, Retry and Reject, what to say.
	Err error
	// Outcome: for Count, "accepted", "duplicate".
	Outcome string
}

// String renders the action as the table tests spell it: the op and its
// argument ("count accepted", "answer r1", "reject session s ...").
func (a Action) String() string {
	s := a.Op.String()
	switch a.Op {
	case Take:
		if a.Load {
			s += " loading"
		}
	case Start:
		if a.Steer {
			s += " steering"
		}
	case Wait:
		if a.Silent {
			s += " silent"
		}
	case Answer, Publish:
		s += " " + a.Run
	case AbortRun:
		s += " " + a.Reason
	case ReplyAborted:
		s += " " + a.Reason + " at " + a.At.UTC().Format(time.RFC3339)
	case Emit, Retry, Reject:
		if a.Err != nil {
			s += ": " + a.Err.Error()
		}
	case Count:
		s += " " + a.Outcome
	}
	return s
}
