package inputpolicy

import "fmt"

// Step decides what to do with delivery d of a session that stands as s,
// and returns the session's new state with the actions, in the order the
// runner carries them out. It is the whole input policy of a session:
//
//   - durable input of a partition this orchestrator does not serve goes
//     back at once, for the next owner (a handover);
//   - input is taken by its session, loaded if need be; an abort only by a
//     session in memory, and one that is not has no run to abort;
//   - a session that left memory meanwhile is taken afresh; one that is
//     being handed over has the input delivered again later; one that is
//     loading holds it, up to Limit, in arrival order;
//   - a decision goes to the approval gate (Decided answers it), an abort to
//     the active run (Aborted answers it);
//   - a message whose id is new starts a run of its own, queued behind any
//     interrupted run, up to Limit (a steer enters the active run);
//   - a redelivery or another copy of a message whose run is queued,
//     running, or resumed after a restart waits for that run: one run,
//     settled once (Ended);
//   - someone waiting on a reply subject is answered once per request: a
//     relayed ask once per stream message, whether its answer comes from
//     the run's end or from the store, and whichever of its copy read at
//     load and its deliveries reaches the session first (replies);
//   - a message whose run ended is answered from the store and settled,
//     not run again; a new copy of an in also gets the final message on the
//     out subject again, once per copy (not for its redeliveries).
//
// A delivery read from the stream at load (Scanned) settles nothing: the
// consumer's delivery of the same message does. It counts nothing either.
func Step(s State, d Delivery) (State, []Action) {
	if !s.Taken {
		return s, admit(s, d)
	}
	switch {
	case s.Evicted:
		return s, []Action{{Op: Retake}}
	case s.Stopped != nil:
		return s, retry(fmt.Errorf("session %s is being handed over: %w", d.Session, s.Stopped))
	case !s.Loaded:
		if s.Backlog >= s.Limit {
			return s, retry(fmt.Errorf("session %s of agent %s has %d messages waiting, the limit is %d", d.Session, d.Agent, s.Backlog, s.Limit))
		}
		return s, []Action{{Op: Hold}}
	}
	switch d.Kind {
	case Decision:
		if d.Scanned {
			return s, nil
		}
		return s, []Action{{Op: Gate}}
	case Abort:
		return s, []Action{{Op: AbortRun, Reason: d.Reason}}
	}
	return message(s, d)
}

// admit decides what to do with a delivery that no session has taken yet.
func admit(s State, d Delivery) []Action {
	if d.Durable && !s.Owned {
		return []Action{{Op: Nak}}
	}
	switch d.Kind {
	case In, Ask, Steer, Decision:
		return []Action{{Op: Take, Load: true}}
	case Abort:
		if !s.InMemory {
			return []Action{noRun(d)}
		}
		return []Action{{Op: Take}}
	}
	return []Action{{Op: Reject, Err: fmt.Errorf("unknown input kind %q", string(d.Kind))}}
}

// message decides for an in, ask or steer by what the session knows of its
// id.
func message(s State, d Delivery) (State, []Action) {
	k := s.Msg
	var acts []Action
	switch {
	case !k.Seen:
		if s.Queued >= s.Limit {
			if d.Scanned {
				return s, nil
			}
			return s, retry(fmt.Errorf("session %s of agent %s has %d messages queued, the limit is %d", d.Session, d.Agent, s.Queued, s.Limit))
		}
		var reply bool
		reply, s.Msg = replies(Message{Seen: true, Seq: d.Seq, Delivered: !d.Scanned}, d)
		if !d.Scanned {
			acts = append(acts, count("accepted"))
		}
		if !d.Scanned || reply {
			// A relayed ask read from the stream is answered when its run
			// ends: its delivery may have gone to an owner that died.
			acts = append(acts, wait(d, reply))
		}
		return s, append(acts, Action{Op: Start, Steer: d.Kind == Steer})
	case !k.Ended:
		if !d.Scanned {
			// The first delivery this process sees of a message it read
			// from the stream, or whose run it resumed, is no duplicate.
			if k.Delivered {
				acts = append(acts, count("duplicate"))
			} else {
				acts = append(acts, count("accepted"))
			}
			s.Msg.Delivered = true
		}
		var reply bool
		reply, s.Msg = replies(s.Msg, d)
		if !d.Scanned || reply {
			acts = append(acts, wait(d, reply))
		}
		return s, acts
	}
	var reply bool
	reply, s.Msg = replies(s.Msg, d)
	if d.Scanned {
		if reply {
			acts = append(acts, Action{Op: Answer, Run: k.Run}) // a relayed ask read from the stream
		}
		return s, acts
	}
	acts = append(acts, count("duplicate"))
	if reply {
		acts = append(acts, Action{Op: Answer, Run: k.Run})
	}
	// Another stream message with an id already answered, not a
	// redelivery: a client that sent it anew reads the out subject. Once
	// per copy: a copy's redelivery (its ack lost as the server died, or
	// delivered again while the session loaded) is not answered again, nor
	// is an earlier copy delivered again after a later one was answered (a
	// partition delivers its copies in stream order).
	if d.Kind != Ask && d.Seq != 0 && k.Seq != 0 && d.Seq != k.Seq && d.Seq > k.Answered {
		acts = append(acts, Action{Op: Publish, Run: k.Run})
		s.Msg.Answered = d.Seq
	}
	if s.Leased && d.Durable {
		acts = append(acts, Action{Op: Ack})
	}
	return s, acts
}

// replies reports whether delivery d is answered, given what the session
// knows of its id k, and returns k with the answer noted. Each core request
// is answered (it has its own reply subject and no stream sequence); a
// relayed ask once per stream message, by whichever comes first of its
// copy read from the stream at load and its deliveries, and not when a
// later stream message of the id was answered already (a partition
// delivers in stream order, so the earlier one had its answer first).
func replies(k Message, d Delivery) (bool, Message) {
	switch {
	case !d.Reply:
		return false, k
	case d.Seq == 0:
		return true, k
	case d.Seq <= k.Replied:
		return false, k
	}
	k.Replied = d.Seq
	return true, k
}

// wait is the Wait of delivery d, silent when someone waits for an answer
// that another delivery gives.
func wait(d Delivery, reply bool) Action {
	return Action{Op: Wait, Silent: d.Reply && !reply}
}

func retry(err error) []Action { return []Action{{Op: Retry, Err: err}} }

func count(outcome string) Action { return Action{Op: Count, Outcome: outcome} }

func noRun(d Delivery) Action {
	return Action{Op: Reject, Err: fmt.Errorf("session %s of agent %s has no active run to abort", d.Session, d.Agent)}
}
