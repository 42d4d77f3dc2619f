package toolrpc

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// TestAttemptStep walks an attempt's state machine through every way a
// call's frames, its timer and its context can come: the effects of each
// event, and the state at the end.
func TestAttemptStep(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Unix(1_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	const cancelSubject = "agent.worker.w1.cancel"
	frame := func(d time.Duration, f *wire.Frame) attemptEvent {
		return attemptEvent{kind: frameArrived, frame: delivery{f: f}, now: at(d)}
	}
	ack := func(d time.Duration, hbMS int64) attemptEvent {
		return frame(d, &wire.Frame{T: wire.FrameAck, Worker: "w/1", Cancel: cancelSubject, HeartbeatMS: hbMS})
	}
	beat := func(d time.Duration) attemptEvent { return frame(d, &wire.Frame{T: wire.FrameHeartbeat}) }
	partial := func(d time.Duration) attemptEvent { return frame(d, &wire.Frame{T: wire.FrameProgress}) }
	timer := func(d time.Duration) attemptEvent { return attemptEvent{kind: timerFired, now: at(d)} }
	done := attemptEvent{kind: ctxEnded}
	bad := func(d time.Duration, worker string) attemptEvent {
		return attemptEvent{kind: frameArrived, frame: delivery{err: errors.New("bad"), worker: worker}, now: at(d)}
	}
	rearm := attemptEffects{rearm: true}

	tests := []struct {
		name       string
		deadline   time.Duration // from t0; 0: none
		events     []attemptEvent
		want       []attemptEffects // of each event
		wantWorker string
		wantCancel string
		wantWindow time.Duration
		wantLast   time.Duration
	}{
		{
			name:   "ack then beats",
			events: []attemptEvent{ack(10*ms, 100), beat(50 * ms), beat(150 * ms), timer(310 * ms)},
			want:   []attemptEffects{rearm, {}, {}, rearm},
			// The window is three heartbeats of the ack's 100ms.
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 300 * ms, wantLast: 150 * ms,
		},
		{
			name:       "progress before the ack",
			events:     []attemptEvent{partial(1 * ms), ack(2*ms, 100), partial(3 * ms)},
			want:       []attemptEffects{{progress: true}, rearm, {progress: true}},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 300 * ms, wantLast: 3 * ms,
		},
		{
			name:   "heartbeat loss: the worker is lost",
			events: []attemptEvent{ack(10*ms, 100), timer(310 * ms)},
			want: []attemptEffects{rearm,
				{end: endLost, cancel: true, outcome: "worker_lost", observed: "w/1", worker: "w/1"}},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 300 * ms, wantLast: 10 * ms,
		},
		{
			name:       "no ack within the ack timeout",
			events:     []attemptEvent{timer(time.Second), timer(5 * time.Second)},
			want:       []attemptEffects{rearm, {end: endLost, cancel: true, outcome: "worker_lost"}},
			wantWindow: 5 * time.Second,
		},
		{
			name:       "busy: back off and send again",
			events:     []attemptEvent{frame(ms, &wire.Frame{T: wire.FrameBusy, Worker: "w/2"})},
			want:       []attemptEffects{{end: endBusy, outcome: "busy", observed: "w/2", worker: "w/2"}},
			wantWindow: 5 * time.Second, wantLast: ms,
		},
		{
			name:       "result of the worker that acked",
			events:     []attemptEvent{ack(ms, 100), frame(2*ms, &wire.Frame{T: wire.FrameResult, Result: agentfleet.TextResult("ok")})},
			want:       []attemptEffects{rearm, {end: endResult, outcome: "ok", observed: "w/1", worker: "w/1"}},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 300 * ms, wantLast: 2 * ms,
		},
		{
			name:       "result naming its worker, without an ack",
			events:     []attemptEvent{frame(ms, &wire.Frame{T: wire.FrameResult, Worker: "w/3"})},
			want:       []attemptEffects{{end: endResult, outcome: "ok", observed: "w/3", worker: "w/3"}},
			wantWindow: 5 * time.Second, wantLast: ms,
		},
		{
			name:       "error result",
			events:     []attemptEvent{ack(ms, 100), frame(2*ms, &wire.Frame{T: wire.FrameResult, IsError: true})},
			want:       []attemptEffects{rearm, {end: endErrorResult, outcome: "error", observed: "w/1", worker: "w/1"}},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 300 * ms, wantLast: 2 * ms,
		},
		{
			name:       "error frame",
			events:     []attemptEvent{frame(ms, &wire.Frame{T: wire.FrameError, Worker: "w/4", Code: wire.CodeBadRequest})},
			want:       []attemptEffects{{end: endWorkerError, outcome: "error", observed: "w/4", worker: "w/4"}},
			wantWindow: 5 * time.Second, wantLast: ms,
		},
		{
			name:       "decode error before the ack: cancel, name the frame's worker",
			events:     []attemptEvent{bad(ms, "w/9")},
			want:       []attemptEffects{{end: endBadFrame, cancel: true, outcome: "error", worker: "w/9"}},
			wantWindow: 5 * time.Second,
		},
		{
			name:       "decode error after the ack: cancel on the acking worker",
			events:     []attemptEvent{ack(ms, 100), bad(2*ms, "w/9")},
			want:       []attemptEffects{rearm, {end: endBadFrame, cancel: true, outcome: "error", observed: "w/1", worker: "w/1"}},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 300 * ms, wantLast: ms,
		},
		{
			name:       "no responders",
			events:     []attemptEvent{{kind: frameArrived, frame: delivery{noResponder: true}, now: at(ms)}},
			want:       []attemptEffects{{end: endNoResponders, outcome: "no_responders"}},
			wantWindow: 5 * time.Second,
		},
		{
			name:       "timeout before the ack: the cancel waits for it",
			deadline:   time.Second,
			events:     []attemptEvent{timer(time.Second)},
			want:       []attemptEffects{{end: endTimeout, handOff: true}},
			wantWindow: 5 * time.Second,
		},
		{
			name:       "timeout after the ack: cancel",
			deadline:   time.Second,
			events:     []attemptEvent{ack(ms, 1000), beat(900 * ms), timer(time.Second)},
			want:       []attemptEffects{rearm, {}, {end: endTimeout, cancel: true, worker: "w/1"}},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 3 * time.Second, wantLast: 900 * ms,
		},
		{
			name:       "context ends before the ack",
			events:     []attemptEvent{partial(ms), done},
			want:       []attemptEffects{{progress: true}, {end: endCtx, handOff: true}},
			wantWindow: 5 * time.Second, wantLast: ms,
		},
		{
			name:       "context ends after the ack",
			events:     []attemptEvent{ack(ms, 100), done},
			want:       []attemptEffects{rearm, {end: endCtx, cancel: true, worker: "w/1"}},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 300 * ms, wantLast: ms,
		},
		{
			name:       "an ack without hb_ms keeps the window",
			events:     []attemptEvent{ack(ms, 0)},
			want:       []attemptEffects{rearm},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 5 * time.Second, wantLast: ms,
		},
		{
			name:       "a huge hb_ms is clamped",
			events:     []attemptEvent{ack(ms, math.MaxInt64)},
			want:       []attemptEffects{rearm},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 3 * wire.MaxHeartbeat, wantLast: ms,
		},
		{
			name:       "a frame of no meaning to the client still shows the worker alive",
			events:     []attemptEvent{ack(ms, 100), frame(200*ms, &wire.Frame{T: wire.FrameCancel}), timer(301 * ms)},
			want:       []attemptEffects{rearm, {}, rearm},
			wantWorker: "w/1", wantCancel: cancelSubject, wantWindow: 300 * ms, wantLast: 200 * ms,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var deadline time.Time
			if tt.deadline > 0 {
				deadline = at(tt.deadline)
			}
			s := newAttemptState(t0, deadline, 5*time.Second, 3)
			for i, e := range tt.events {
				var fx attemptEffects
				s, fx = s.step(e)
				if fx != tt.want[i] {
					t.Errorf("event %d: effects %+v, want %+v", i, fx, tt.want[i])
				}
			}
			if s.worker != tt.wantWorker || s.cancel != tt.wantCancel {
				t.Errorf("worker %q cancel %q, want %q %q", s.worker, s.cancel, tt.wantWorker, tt.wantCancel)
			}
			if s.window != tt.wantWindow {
				t.Errorf("window %v, want %v", s.window, tt.wantWindow)
			}
			if got := s.last.Sub(t0); got != tt.wantLast {
				t.Errorf("last frame at %v, want %v", got, tt.wantLast)
			}
		})
	}
}
