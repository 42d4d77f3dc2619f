package a2aserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/agentfleet/agentfleet"
)

// watch follows one task: it reads the task from the stored history when
// the session's events say its state may have changed (a run started,
// resumed, was suspended or ended; a call waits for approval or was
// decided) and at each Poll besides, since events are core NATS messages
// that an orchestrator's death or a slow reader may lose. The stored
// history is the only source of a task's state: the events are triggers,
// and progress (tool.start, tool.update) shown as working updates.
type watch struct {
	h       *handler
	session string
	key     string
	trigger chan struct{}
	updates chan *agentfleet.Event
	stop    func()
}

// maxUpdates bounds the progress events a watch holds for a slow client;
// more are dropped (the state is read from the history anyway).
const maxUpdates = 64

// newWatch subscribes the session's events; call it before the message
// is sent, so that no event of its run is missed.
func (h *handler) newWatch(session, key string) (*watch, error) {
	if n := h.s.watching.Add(1); n > int64(h.s.cfg.MaxWatches) {
		h.s.watching.Add(-1)
		return nil, fmt.Errorf("%w: this server follows at most %d tasks at once (requests waiting on a task, streams) and all are taken: retry later", a2a.ErrServerError, h.s.cfg.MaxWatches)
	}
	w := &watch{h: h, session: session, key: key, trigger: make(chan struct{}, 1), updates: make(chan *agentfleet.Event, maxUpdates)}
	stop, err := h.s.cfg.Backend.Follow(h.agent, session, func(e *agentfleet.Event) {
		switch e.Type {
		case agentfleet.EventToolStart, agentfleet.EventToolUpdate:
			select {
			case w.updates <- e:
			default:
			}
		case agentfleet.EventRunStart, agentfleet.EventRunEnd, agentfleet.EventRunResumed, agentfleet.EventRunSuspended, agentfleet.EventToolApproval, agentfleet.EventError:
			select {
			case w.trigger <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		h.s.watching.Add(-1)
		return nil, fmt.Errorf("follow session %s: %w", session, err)
	}
	var once sync.Once
	w.stop = func() { once.Do(func() { stop(); h.s.watching.Add(-1) }) }
	return w, nil
}

// load reads the task from the stored history; nil while no stored user
// message has its key.
func (w *watch) load(ctx context.Context) (*Task, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := w.h.s.cfg.Backend.Load(lctx, w.h.agent, w.session)
	if err != nil {
		return nil, fmt.Errorf("%w: the history of session %s: %v", a2a.ErrInternalError, w.session, err)
	}
	t, ok := TaskOf(st.Records, w.session, w.key)
	if !ok {
		return nil, nil
	}
	return t, nil
}

// run passes each new state of the task to onState, and each progress
// event of its run to onProgress (when not nil), until the task is
// terminal or, with stopAtInput, input-required; it returns the last
// task read. A task whose message no run has taken within SubmitWait (it
// waits behind another run of the session, or for an orchestrator) is
// passed on as submitted, and ends the wait: its message is in the
// session's durable input and runs later.
func (w *watch) run(ctx context.Context, stopAtInput bool, onState func(*Task) bool, onProgress func(*Task, *agentfleet.Event) bool) (*Task, error) {
	tick := time.NewTicker(w.h.s.cfg.Poll)
	defer tick.Stop()
	deadline := time.Now().Add(w.h.s.cfg.SubmitWait)
	var last *Task
	for {
		t, err := w.load(ctx)
		if err != nil {
			return last, err
		}
		if t == nil && time.Now().After(deadline) {
			t = &Task{Task: &a2a.Task{ID: TaskID(w.session, w.key), ContextID: w.session, Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted,
				Message: agentMessage(&a2a.Task{ID: TaskID(w.session, w.key), ContextID: w.session}, []a2a.Part{a2a.TextPart{Text: fmt.Sprintf(
					"no run has taken the message within %s: it waits in the session's input (behind another run, or for an orchestrator); tasks/get finds the task once it runs", w.h.s.cfg.SubmitWait)}})}}}
			onState(t)
			return t, nil
		}
		if t != nil {
			if last == nil || changed(last, t) {
				if !onState(t) {
					return t, nil
				}
			}
			last = t
			if s := t.Status.State; s.Terminal() || (stopAtInput && s == a2a.TaskStateInputRequired) {
				return t, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, context.Cause(ctx)
		case <-w.trigger:
		case <-tick.C:
		case e := <-w.updates:
			if last != nil && e.RunID == last.RunID && onProgress != nil && !onProgress(last, e) {
				return last, nil
			}
		}
	}
}

// changed reports whether b is a new state of the task a was.
func changed(a, b *Task) bool {
	if a.Status.State != b.Status.State {
		return true
	}
	pa, pb := "", ""
	if a.Pending != nil {
		pa = a.Pending.ToolCallID
	}
	if b.Pending != nil {
		pb = b.Pending.ToolCallID
	}
	return pa != pb
}

// progressText describes a tool event of the task's run.
func progressText(e *agentfleet.Event) string {
	if e.Type == agentfleet.EventToolStart {
		return fmt.Sprintf("tool %s started", e.ToolName)
	}
	b, _ := json.Marshal(e.Partial)
	return fmt.Sprintf("tool %s: %s", e.ToolName, clip(string(b)))
}
