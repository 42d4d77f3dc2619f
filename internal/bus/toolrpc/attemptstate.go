package toolrpc

import (
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// attemptState is what one attempt of a call knows while it follows the
// call to its end: the call's deadline, the worker that took it, and when
// that worker last spoke. step, a pure function, moves it on one event at a
// time; ToolClient.attempt waits for the events and carries out the
// effects.
type attemptState struct {
	deadline time.Time     // the call's; zero: none
	misses   int           // heartbeat intervals a worker may stay silent
	worker   string        // the worker that acknowledged the call
	cancel   string        // its cancel subject, from the ack
	window   time.Duration // how long the worker may stay silent
	last     time.Time     // the last frame, or the send
}

// newAttemptState is the state of an attempt sent at sent: no worker yet,
// which has ackTimeout to take the call.
func newAttemptState(sent, deadline time.Time, ackTimeout time.Duration, misses int) attemptState {
	return attemptState{deadline: deadline, misses: misses, window: ackTimeout, last: sent}
}

// eventKind says what happened to an attempt.
type eventKind uint8

const (
	frameArrived eventKind = iota // a delivery on the call's inbox
	timerFired                    // the attempt's timer: deadline or watchdog
	ctxEnded                      // the call's context ended
)

// attemptEvent is one thing that happened to an attempt, at now.
type attemptEvent struct {
	kind  eventKind
	frame delivery // of frameArrived
	now   time.Time
}

// attemptEnd says how an attempt ended, or that it goes on.
type attemptEnd uint8

const (
	goOn            attemptEnd = iota // the attempt goes on
	endCtx                            // the call's context ended
	endTimeout                        // the call's deadline passed
	endLost                           // no frame within the window: no worker took the call, or it went silent
	endNoResponders                   // no worker is subscribed to the tool
	endBadFrame                       // a frame did not decode
	endBusy                           // the worker refused the call as busy
	endResult                         // the result
	endErrorResult                    // a result that is an error (is_error)
	endWorkerError                    // an error frame: the worker failed the call
)

// attemptEffects is what the runner does after a step.
type attemptEffects struct {
	end      attemptEnd
	rearm    bool   // arm the timer for the earlier of the deadline and last+window
	progress bool   // pass the frame's partial result on
	cancel   bool   // tell the worker to stop the call, on the state's cancel subject
	handOff  bool   // the ack is still to come: cancel the call once it does (cancelLate)
	outcome  string // the attempt's outcome, for Observe; "" none
	observed string // the worker named to Observe
	worker   string // the worker named in the result or the error
}

// step returns the state after e and what to do about it.
func (s attemptState) step(e attemptEvent) (attemptState, attemptEffects) {
	switch e.kind {
	case ctxEnded:
		return s, s.ended(endCtx)
	case timerFired:
		switch {
		case !s.deadline.IsZero() && !e.now.Before(s.deadline):
			return s, s.ended(endTimeout)
		case e.now.Sub(s.last) < s.window:
			// The watchdog is not moved on every frame: it fires at the
			// window after the frame before, and is armed again for the
			// window after the last.
			return s, attemptEffects{rearm: true}
		}
		return s, attemptEffects{end: endLost, cancel: true, outcome: "worker_lost", observed: s.worker, worker: s.worker}
	}
	d := e.frame
	switch {
	case d.noResponder:
		return s, attemptEffects{end: endNoResponders, outcome: "no_responders"}
	case d.err != nil:
		return s, attemptEffects{end: endBadFrame, cancel: true, outcome: "error", observed: s.worker, worker: orDefault(s.worker, d.worker)}
	}
	f := d.f
	s.last = e.now
	switch f.T {
	case wire.FrameAck:
		s.worker, s.cancel = f.Worker, f.Cancel
		// Clamped: a worker's hb_ms must not overflow the window nor
		// switch loss detection off.
		if w, ok := wire.HeartbeatWindow(f.HeartbeatMS, s.misses); ok {
			s.window = w
		}
		return s, attemptEffects{rearm: true}
	case wire.FrameBusy:
		return s, attemptEffects{end: endBusy, outcome: "busy", observed: f.Worker, worker: f.Worker}
	case wire.FrameProgress:
		return s, attemptEffects{progress: true}
	case wire.FrameResult:
		w := orDefault(f.Worker, s.worker)
		if f.IsError {
			return s, attemptEffects{end: endErrorResult, outcome: "error", observed: w, worker: w}
		}
		return s, attemptEffects{end: endResult, outcome: "ok", observed: w, worker: w}
	case wire.FrameError:
		w := orDefault(f.Worker, s.worker)
		return s, attemptEffects{end: endWorkerError, outcome: "error", observed: w, worker: w}
	}
	return s, attemptEffects{} // a heartbeat, or a frame of no meaning here
}

// ended is the end of an attempt that its context or deadline (end) cut
// short: the call is cancelled on its worker, or, when no ack came yet, as
// soon as one does, since the worker may have taken the call without its
// ack having arrived.
func (s attemptState) ended(end attemptEnd) attemptEffects {
	return attemptEffects{end: end, cancel: s.cancel != "", handOff: s.cancel == "", worker: s.worker}
}
