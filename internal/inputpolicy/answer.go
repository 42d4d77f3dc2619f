package inputpolicy

import "fmt"

// Aborted decides what an abort's delivery hears once the loop said
// whether it had an active run to abort (ok): the outcome, or that there
// was no run.
func Aborted(d Delivery, ok bool) []Action {
	if !ok {
		return []Action{noRun(d)}
	}
	if !d.Reply {
		return nil
	}
	return []Action{{Op: ReplyAborted, Reason: d.Reason, At: d.At}}
}

// Verdict is the approval gate's answer to a decision.
type Verdict struct {
	// OK: the decision was taken.
	OK bool
	// Final: the answer stands; a decision that could not act here (its
	// call is not known to this owner yet) is not final.
	Final bool
	// Error says why the decision was not taken.
	Error string
}

// Decided decides how a decision's delivery is answered once the gate gave
// its verdict v: a decision that could not act here is delivered again (to
// the session's next owner, or to hear why not); otherwise its publisher
// gets the answer, a decision not taken (for an approval that is not
// pending, say) is also an error event (once: not for the relayed copy of a
// request, whose kept copy has it), and the delivery is settled while
// this orchestrator holds its lease.
func Decided(s State, d Delivery, v Verdict) []Action {
	if !v.Final && d.Durable {
		return []Action{{Op: Nak}}
	}
	acts := []Action{{Op: ReplyDecision}}
	// A durable decision sent as a request (relayed, with its reply) has
	// a copy kept without one (the approve stream), refused alike: the
	// error event comes once, from that copy.
	if !v.OK && !(d.Durable && d.Reply) {
		acts = append(acts, Action{Op: Emit, Err: fmt.Errorf("decision rejected: %s", v.Error)})
	}
	if s.Leased && d.Durable {
		acts = append(acts, Action{Op: Ack})
	}
	return acts
}

// Ended decides what a delivery that waited on run hears when the run
// ended and its end is stored: the final message, and its settlement while
// this orchestrator holds its lease (a deposed owner leaves it to the next,
// which answers it from the store).
func Ended(s State, d Delivery, run string) []Action {
	var acts []Action
	if d.Reply {
		acts = append(acts, Action{Op: Answer, Run: run})
	}
	if s.Leased && d.Durable {
		acts = append(acts, Action{Op: Ack})
	}
	return acts
}

// Mode says how a session that is given up leaves the deliveries waiting
// on it.
type Mode int

// The modes of Suspended.
const (
	// LeaveAlone: the lead is lost; touch nothing, acknowledge nothing. The
	// server delivers them to the next owner after the ack wait.
	LeaveAlone Mode = iota
	// HandOver: a shutdown; have them delivered again at once.
	HandOver
	// RetryLater: a write was fenced while this orchestrator serves; have
	// them delivered again after a backoff.
	RetryLater
	// Refuse: the session was deleted; refuse them for good (an ask hears
	// why, durable input is terminated: it is deleted with the session).
	Refuse
)

// Suspended decides what a delivery waiting on a session that is given up,
// as mode says, hears; why is the reason given to a retry.
func Suspended(d Delivery, mode Mode, why error) []Action {
	switch mode {
	case HandOver:
		if d.Durable {
			return []Action{{Op: Nak}}
		}
	case RetryLater:
		return retry(why)
	case Refuse:
		return []Action{{Op: Reject, Err: why}}
	}
	return nil
}
