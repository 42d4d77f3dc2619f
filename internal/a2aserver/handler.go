package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/google/uuid"
)

// handler answers the A2A methods for one agent.
type handler struct {
	s     *Server
	agent string
}

var _ a2asrv.RequestHandler = (*handler)(nil)

// invalid is an invalid-params error that says why.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
}

// target is what a message/send asks for: a new task in a session, or
// the answer to a task's input-required.
type target struct {
	session, key string
	content      []agentfleet.Content
	answer       *Task // the input-required task the message answers
}

// resolve reads a message/send's params: a message with a taskId answers
// that task (which must wait for input, in the same context); one without
// starts a task in its contextId's session, or a new session.
func (h *handler) resolve(ctx context.Context, p *a2a.MessageSendParams) (*target, error) {
	if p == nil || p.Message == nil {
		return nil, invalid("params.message is required")
	}
	m := p.Message
	if m.Role != a2a.MessageRoleUser {
		return nil, invalid("params.message.role is %q: a client sends role user", m.Role)
	}
	if p.Config != nil && p.Config.PushConfig != nil {
		return nil, fmt.Errorf("%w: this server sends no push notifications: use message/stream or tasks/resubscribe", a2a.ErrPushNotificationNotSupported)
	}
	if m.TaskID != "" {
		session, key, err := ParseTaskID(m.TaskID)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", a2a.ErrTaskNotFound, err)
		}
		if m.ContextID != "" && m.ContextID != session {
			return nil, invalid("task %s belongs to context %s, not %s", m.TaskID, session, clip(m.ContextID))
		}
		t, err := h.task(ctx, session, key)
		if err != nil {
			return nil, err
		}
		if t.Status.State != a2a.TaskStateInputRequired {
			if t.Status.State.Terminal() {
				return nil, fmt.Errorf("%w: task %s is %s; send a message without taskId, with contextId %s, to go on in its session", a2a.ErrUnsupportedOperation, m.TaskID, t.Status.State, session)
			}
			return nil, fmt.Errorf("%w: task %s is %s; it takes a message only when input-required", a2a.ErrUnsupportedOperation, m.TaskID, t.Status.State)
		}
		return &target{session: session, key: key, answer: t}, nil
	}
	session := m.ContextID
	if session == "" {
		session = "a2a-" + uuid.NewString()
	} else if err := bus.CheckToken("session", session); err != nil {
		return nil, invalid("contextId: %v", err)
	}
	if m.ID == "" {
		return nil, invalid("params.message.messageId is required")
	}
	content, err := Content(m.Parts)
	if err != nil {
		return nil, invalid("params.message.parts: %v", err)
	}
	return &target{session: session, key: MessageKey(h.agent, session, m.ID), content: content}, nil
}

// task reads a task from the stored history, or ErrTaskNotFound.
func (h *handler) task(ctx context.Context, session, key string) (*Task, error) {
	w := &watch{h: h, session: session, key: key}
	t, err := w.load(ctx)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("%w: no task %s for agent %s", a2a.ErrTaskNotFound, TaskID(session, key), h.agent)
	}
	return t, nil
}

// start sends the message of tg (a new user message, or the decision on
// the pending call) with a watch on the session in place first.
func (h *handler) start(ctx context.Context, tg *target) (*watch, error) {
	w, err := h.newWatch(tg.session, tg.key)
	if err != nil {
		return nil, err
	}
	if err := h.send(ctx, tg); err != nil {
		w.stop()
		return nil, err
	}
	return w, nil
}

func (h *handler) send(ctx context.Context, tg *target) error {
	b := h.s.cfg.Backend
	if tg.answer == nil {
		if err := b.Send(ctx, h.agent, tg.session, tg.key, tg.content); err != nil {
			return fmt.Errorf("%w: send to session %s: %v", a2a.ErrInternalError, tg.session, err)
		}
		return nil
	}
	return nil
}

// decide sends the decision the parts carry on the task's pending call.
func (h *handler) decide(ctx context.Context, t *Task, parts []a2a.Part) error {
	approve, reason, err := Decision(parts)
	if err != nil {
		return invalid("task %s waits for a decision on tool call %s (%s): %v", t.ID, t.Pending.ToolName, t.Pending.ToolCallID, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	reply, err := h.s.cfg.Backend.Decide(dctx, h.agent, t.ContextID, &agentfleet.ApprovalDecision{ToolCallID: t.Pending.ToolCallID, Approve: approve, Reason: reason})
	if err != nil {
		return fmt.Errorf("%w: decision on tool call %s: %v", a2a.ErrInternalError, t.Pending.ToolCallID, err)
	}
	if !reply.OK {
		return fmt.Errorf("%w: decision on tool call %s not taken: %s", a2a.ErrUnsupportedOperation, t.Pending.ToolCallID, reply.Error)
	}
	return nil
}

// OnSendMessage implements a2asrv.RequestHandler: it answers with the
// task, once it is terminal or input-required, or at once, as submitted,
// when the client asked not to block.
func (h *handler) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	tg, err := h.resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	w, err := h.start(ctx, tg)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	if tg.answer != nil {
		if err := h.decide(ctx, tg.answer, p.Message.Parts); err != nil {
			return nil, err
		}
	}
	if p.Config != nil && p.Config.Blocking != nil && !*p.Config.Blocking {
		if tg.answer != nil {
			tg.answer.Status = a2a.TaskStatus{State: a2a.TaskStateWorking}
			return tg.answer.Task, nil
		}
		return &a2a.Task{ID: TaskID(tg.session, tg.key), ContextID: tg.session, Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}, nil
	}
	// The input-required state the decision answers is not the answer.
	skip := tg.answer
	t, err := w.run(ctx, false, func(t *Task) bool { return !isFinal(t, skip) }, nil)
	if err != nil {
		return nil, err
	}
	return clipHistory(t.Task, p.Config), nil
}

// OnSendMessageStream implements a2asrv.RequestHandler: the task, then
// its status updates (working, with the progress of its tool calls), its
// answer as an artifact, and its last status, final: terminal or
// input-required.
func (h *handler) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		tg, err := h.resolve(ctx, p)
		if err != nil {
			yield(nil, err)
			return
		}
		w, err := h.start(ctx, tg)
		if err != nil {
			yield(nil, err)
			return
		}
		defer w.stop()
		var first *a2a.Task
		if tg.answer != nil {
			if err := h.decide(ctx, tg.answer, p.Message.Parts); err != nil {
				yield(nil, err)
				return
			}
			first = tg.answer.Task
			first.Status = a2a.TaskStatus{State: a2a.TaskStateWorking}
		} else {
			first = &a2a.Task{ID: TaskID(tg.session, tg.key), ContextID: tg.session, Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}, History: []*a2a.Message{p.Message}}
			first.History[0].TaskID, first.History[0].ContextID = first.ID, first.ContextID
		}
		if !yield(first, nil) {
			return
		}
		h.stream(ctx, w, tg.answer, yield)
	}
}

// OnResubscribeToTask implements a2asrv.RequestHandler: the task as
// stored, then as OnSendMessageStream. Any orchestrator answers it: the
// task is read from the session's stored history.
func (h *handler) OnResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if p == nil {
			yield(nil, invalid("params.id is required"))
			return
		}
		session, key, err := ParseTaskID(p.ID)
		if err != nil {
			yield(nil, fmt.Errorf("%w: %v", a2a.ErrTaskNotFound, err))
			return
		}
		w, err := h.newWatch(session, key)
		if err != nil {
			yield(nil, err)
			return
		}
		defer w.stop()
		t, err := w.load(ctx)
		if err == nil && t == nil {
			err = fmt.Errorf("%w: no task %s for agent %s", a2a.ErrTaskNotFound, p.ID, h.agent)
		}
		if err != nil {
			yield(nil, err)
			return
		}
		if !yield(t.Task, nil) || t.Status.State.Terminal() || t.Status.State == a2a.TaskStateInputRequired {
			return
		}
		h.stream(ctx, w, t, yield)
	}
}

// stream yields the task's updates until its final state; skip, when not
// nil, is a state already told.
func (h *handler) stream(ctx context.Context, w *watch, skip *Task, yield func(a2a.Event, error) bool) {
	_, err := w.run(ctx, false, func(t *Task) bool {
		if skip != nil && !changed(skip, t) {
			return true // told already
		}
		st := t.Status
		final := isFinal(t, nil) || st.State == a2a.TaskStateSubmitted // submitted: given up waiting
		if final && len(t.Artifacts) > 0 {
			for _, a := range t.Artifacts {
				if !yield(&a2a.TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Artifact: a, LastChunk: true}, nil) {
					return false
				}
			}
		}
		return yield(&a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: st, Final: final}, nil) && !final
	}, func(t *Task, e *agentfleet.Event) bool {
		m := agentMessage(t.Task, []a2a.Part{a2a.TextPart{Text: progressText(e)}})
		m.ID = fmt.Sprintf("%s-%s-%d", t.ID, e.ToolCallID, e.Seq)
		return yield(&a2a.TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: m}}, nil)
	})
	if err != nil && ctx.Err() == nil {
		yield(nil, err)
	}
}

// OnGetTask implements a2asrv.RequestHandler, from the stored history.
func (h *handler) OnGetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	if q == nil {
		return nil, invalid("params.id is required")
	}
	session, key, err := ParseTaskID(q.ID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", a2a.ErrTaskNotFound, err)
	}
	t, err := h.task(ctx, session, key)
	if err != nil {
		return nil, err
	}
	return clipHistory(t.Task, &a2a.MessageSendConfig{HistoryLength: q.HistoryLength}), nil
}

// OnCancelTask implements a2asrv.RequestHandler: it aborts the task's
// run and answers with the task once the run's end is stored.
func (h *handler) OnCancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	if p == nil {
		return nil, invalid("params.id is required")
	}
	session, key, err := ParseTaskID(p.ID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", a2a.ErrTaskNotFound, err)
	}
	w, err := h.newWatch(session, key)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	t, err := h.task(ctx, session, key)
	if err != nil {
		return nil, err
	}
	if t.Status.State.Terminal() {
		return nil, fmt.Errorf("%w: task %s is %s already", a2a.ErrTaskNotCancelable, p.ID, t.Status.State)
	}
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	reply, err := h.s.cfg.Backend.Abort(actx, h.agent, session, "canceled by the A2A client")
	if err != nil {
		return nil, fmt.Errorf("%w: abort the run of task %s: %v", a2a.ErrInternalError, p.ID, err)
	}
	if reply.StopReason == agentfleet.StopReasonAborted && reply.RunID != "" && reply.RunID != t.RunID {
		// The task's run ended between the read and the abort, and the
		// abort, which names no run, stopped the session's next one.
		return nil, fmt.Errorf("%w: task %s ended before the abort came, which stopped the session's next run %s", a2a.ErrTaskNotCancelable, p.ID, reply.RunID)
	}
	wctx, wcancel := context.WithTimeout(ctx, h.s.cfg.SubmitWait)
	defer wcancel()
	t, err = w.run(wctx, false, func(*Task) bool { return true }, nil)
	if err != nil {
		return nil, err
	}
	return t.Task, nil
}

// isFinal reports whether t ends a wait: terminal, or input-required
// for another call than skip's.
func isFinal(t, skip *Task) bool {
	s := t.Status.State
	return s.Terminal() || (s == a2a.TaskStateInputRequired && (skip == nil || changed(skip, t)))
}

// clipHistory keeps the last HistoryLength messages of the history, when
// the client gave one.
func clipHistory(t *a2a.Task, cfg *a2a.MessageSendConfig) *a2a.Task {
	if cfg != nil && cfg.HistoryLength != nil && *cfg.HistoryLength >= 0 && len(t.History) > *cfg.HistoryLength {
		t.History = t.History[len(t.History)-*cfg.HistoryLength:]
	}
	return t
}

var errNoPush = fmt.Errorf("%w: this server sends no push notifications: use message/stream or tasks/resubscribe", a2a.ErrPushNotificationNotSupported)

// OnGetTaskPushConfig implements a2asrv.RequestHandler: not supported.
func (h *handler) OnGetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigParams) (*a2a.TaskPushConfig, error) {
	return nil, errNoPush
}

// OnListTaskPushConfig implements a2asrv.RequestHandler: not supported.
func (h *handler) OnListTaskPushConfig(context.Context, *a2a.ListTaskPushConfigParams) ([]*a2a.TaskPushConfig, error) {
	return nil, errNoPush
}

// OnSetTaskPushConfig implements a2asrv.RequestHandler: not supported.
func (h *handler) OnSetTaskPushConfig(context.Context, *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	return nil, errNoPush
}

// OnDeleteTaskPushConfig implements a2asrv.RequestHandler: not supported.
func (h *handler) OnDeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigParams) error {
	return errNoPush
}

// OnGetExtendedAgentCard implements a2asrv.RequestHandler: the public
// card is the only one.
func (h *handler) OnGetExtendedAgentCard(context.Context) (*a2a.AgentCard, error) {
	return nil, errors.Join(a2a.ErrAuthenticatedExtendedCardNotConfigured)
}
