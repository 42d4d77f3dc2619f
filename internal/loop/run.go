package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/google/uuid"
)

// LengthText is the result of a tool call found in a response that the model
// cut off at its token limit; such calls are not executed.
const LengthText = "Tool call not executed: the model's response was cut off at its token limit, so its arguments may be incomplete."

// run is one run of a session: turns of model call and tool batch until the
// model stops, a batch terminates, the turn limit is hit, the model fails or
// the run is aborted.
type run struct {
	s     *Session
	ctx   context.Context
	id    string
	turn  int
	took  []*pending
	usage *agentfleet.Usage
	last  *agentfleet.AssistantMessage
}

// Emit implements agentfleet.EventSink for the pipeline of the current turn.
func (r *run) Emit(e *agentfleet.Event) { r.s.emit(r.id, r.turn, e) }

func (r *run) emit(e *agentfleet.Event) { r.s.emit(r.id, r.turn, e) }

func (r *run) take(ps []*pending) {
	for _, p := range ps {
		r.took = append(r.took, p)
		if p.resume == "" {
			r.s.append(r.id, p.msg)
		}
	}
}

func (r *run) execute(first []*pending) (final *agentfleet.AssistantMessage) {
	cfg := &r.s.cfg
	r.id = uuid.NewString()
	for _, p := range first {
		if p.resume != "" {
			r.id = p.resume
			break
		}
	}
	r.emit(&agentfleet.Event{Type: agentfleet.EventRunStart})
	defer func() {
		final.RunID = r.id
		final.Usage = r.usage
		if final.Timestamp.IsZero() {
			final.Timestamp = time.Now().UTC()
		}
		r.emit(&agentfleet.Event{Type: agentfleet.EventRunEnd, StopReason: final.StopReason, Message: final})
	}()
	r.take(first)
	r.settleInterrupted()

	for {
		// Step 1 of spec section 6: steering enters before every model call.
		r.take(r.s.takeSteering())
		if r.ctx.Err() != nil {
			return r.aborted()
		}
		r.turn++
		r.emit(&agentfleet.Event{Type: agentfleet.EventTurnStart})
		msg, calls, final := r.callModel()
		if final != nil {
			r.emit(&agentfleet.Event{Type: agentfleet.EventTurnEnd})
			return final
		}
		if len(calls) == 0 {
			r.emit(&agentfleet.Event{Type: agentfleet.EventTurnEnd})
			if r.s.hasSteering() {
				continue
			}
			final := *msg
			if final.StopReason == agentfleet.StopReasonLength {
				final.ErrorMessage = "the model's response was cut off at its token limit"
			} else {
				final.StopReason = agentfleet.StopReasonStop
			}
			return &final
		}
		if msg.StopReason == agentfleet.StopReasonLength {
			r.refuse(calls)
			r.emit(&agentfleet.Event{Type: agentfleet.EventTurnEnd})
			final := *msg
			final.ErrorMessage = "the model's response was cut off at its token limit"
			return &final
		}
		batch := r.runTools(msg, calls)
		r.emit(&agentfleet.Event{Type: agentfleet.EventTurnEnd})
		switch {
		case batch.Terminate:
			return r.terminated(msg, batch)
		case r.ctx.Err() != nil:
			return r.aborted()
		case r.turn >= cfg.MaxTurns:
			return r.synthetic(agentfleet.StopReasonMaxTurns, fmt.Sprintf("the run reached its limit of %d turns", cfg.MaxTurns))
		}
	}
}

// callModel runs the hooks and the model for one turn. It returns the
// assistant message and its tool calls, or the final message of a run that
// cannot go on.
func (r *run) callModel() (*agentfleet.AssistantMessage, []agentfleet.ToolCall, *agentfleet.AssistantMessage) {
	cfg := &r.s.cfg
	st := &State{
		Agent: cfg.Agent, Session: cfg.Session, SystemPrompt: cfg.SystemPrompt,
		Model: cfg.ModelName, Tools: cfg.Tools, Messages: r.s.History(),
	}
	pctx, err := cfg.PrepareContext(r.ctx, st)
	if err != nil {
		return nil, nil, r.failed(fmt.Errorf("prepare context: %w", err))
	}
	req, err := cfg.Format(st, pctx)
	if err != nil {
		return nil, nil, r.failed(fmt.Errorf("format request: %w", err))
	}
	r.emit(&agentfleet.Event{Type: agentfleet.EventMessageStart})
	msg, err := r.complete(req)
	if err != nil {
		var final *agentfleet.AssistantMessage
		if r.ctx.Err() != nil {
			final = r.aborted()
		} else {
			final = r.failed(err)
		}
		r.emit(&agentfleet.Event{Type: agentfleet.EventMessageEnd, Message: final})
		return nil, nil, final
	}
	msg.Role = agentfleet.RoleAssistant
	msg.RunID = r.id
	if msg.Timestamp.IsZero() {
		msg.Timestamp = time.Now().UTC()
	}
	calls := ExtractToolCalls(msg)
	r.usage = r.usage.Add(msg.Usage)
	r.last = msg
	r.s.append(r.id, msg)
	r.emit(&agentfleet.Event{Type: agentfleet.EventMessageEnd, Message: msg})
	return msg, calls, nil
}

// complete calls the model, turning a panic into an error.
func (r *run) complete(req *Request) (msg *agentfleet.AssistantMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			msg, err = nil, fmt.Errorf("model panicked: %v", v)
		}
	}()
	if r.s.cfg.Model == nil {
		return nil, errors.New("no model configured")
	}
	msg, err = r.s.cfg.Model.Complete(r.ctx, req, func(delta string) {
		if delta != "" {
			r.emit(&agentfleet.Event{Type: agentfleet.EventMessageUpdate, Delta: delta})
		}
	})
	if err == nil && msg == nil {
		err = errors.New("model returned no message")
	}
	return msg, err
}

func (r *run) runTools(msg *agentfleet.AssistantMessage, calls []agentfleet.ToolCall) *pipeline.Batch {
	cfg := &r.s.cfg
	pc := cfg.Pipeline
	pc.Sink, pc.Agent, pc.Session, pc.RunID = r, cfg.Agent, cfg.Session, r.id
	pctx := &pipeline.Context{SystemPrompt: cfg.SystemPrompt, Messages: r.s.History(), Tools: cfg.Tools}
	batch := pipeline.New(pc).Run(r.ctx, pctx, msg, calls)
	for _, m := range batch.Messages {
		r.s.append(r.id, m)
	}
	return batch
}

// refuse answers the calls of a truncated response with error results.
func (r *run) refuse(calls []agentfleet.ToolCall) {
	for _, c := range calls {
		r.emit(&agentfleet.Event{Type: agentfleet.EventToolStart, ToolCallID: c.ID, ToolName: c.Name, Arguments: c.Arguments})
		o := &pipeline.Outcome{Call: c, Result: agentfleet.ErrorResult(LengthText), IsError: true, Kind: pipeline.Truncated}
		r.emit(&agentfleet.Event{Type: agentfleet.EventToolEnd, ToolCallID: c.ID, ToolName: c.Name, Result: o.Result, IsError: true, Outcome: string(pipeline.Truncated)})
		r.s.append(r.id, o.Message())
	}
}

// terminated builds the final message of a batch whose every result asked
// to terminate (spec section 10).
func (r *run) terminated(msg *agentfleet.AssistantMessage, b *pipeline.Batch) *agentfleet.AssistantMessage {
	content := []agentfleet.Content{agentfleet.Text("Tool execution completed.")}
	failed := false
	for _, m := range b.Messages {
		failed = failed || m.IsError
		for _, c := range m.Content {
			if c.Type == agentfleet.ContentText {
				content = append(content, c)
			}
		}
	}
	final := &agentfleet.AssistantMessage{
		Role: agentfleet.RoleAssistant, Content: content,
		API: msg.API, Provider: msg.Provider, Model: msg.Model,
		StopReason: agentfleet.StopReasonToolTerminated,
	}
	if failed {
		final.ErrorMessage = "One or more tool calls failed"
	}
	return final
}

func (r *run) aborted() *agentfleet.AssistantMessage {
	text := ErrAborted.Error()
	if cause := context.Cause(r.ctx); cause != nil {
		text = cause.Error()
	}
	return r.synthetic(agentfleet.StopReasonAborted, text)
}

// failed ends the run with stop reason error and emits an error event.
func (r *run) failed(err error) *agentfleet.AssistantMessage {
	r.emit(&agentfleet.Event{Type: agentfleet.EventError, ErrorMessage: err.Error()})
	return r.synthetic(agentfleet.StopReasonError, err.Error())
}

// synthetic builds a final message the loop writes itself, carrying the text
// of the last model response, if any.
func (r *run) synthetic(reason agentfleet.StopReason, errMsg string) *agentfleet.AssistantMessage {
	m := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{}, StopReason: reason, ErrorMessage: errMsg}
	if r.last != nil {
		m.API, m.Provider, m.Model = r.last.API, r.last.Provider, r.last.Model
		for _, c := range r.last.Content {
			if c.Type == agentfleet.ContentText {
				m.Content = append(m.Content, c)
			}
		}
	} else {
		m.Model = r.s.cfg.ModelName
	}
	m.Content = slices.Clip(m.Content)
	return m
}

func (s *Session) hasSteering() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steering) > 0
}

// settleInterrupted answers the tool calls of the last assistant message that
// have no result: the process stopped while they were in flight. Calls of
// idempotent or read-only tools run again; the others get an error result,
// since running them twice could do harm.
func (r *run) settleInterrupted() {
	h := r.s.History()
	last := -1
	for i := len(h) - 1; i >= 0; i-- {
		if _, ok := h[i].(*agentfleet.AssistantMessage); ok {
			last = i
			break
		}
	}
	if last < 0 {
		return
	}
	answered := map[string]bool{}
	for _, m := range h[last+1:] {
		if tr, ok := m.(*agentfleet.ToolResultMessage); ok {
			answered[tr.ToolCallID] = true
		}
	}
	msg := h[last].(*agentfleet.AssistantMessage)
	probe := &agentfleet.AssistantMessage{Content: slices.Clone(msg.Content)}
	var missing []agentfleet.ToolCall
	for _, c := range ExtractToolCalls(probe) {
		if !answered[c.ID] {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return
	}
	cfg := &r.s.cfg
	pc := cfg.Pipeline
	pc.Sink, pc.Agent, pc.Session, pc.RunID = r, cfg.Agent, cfg.Session, r.id
	before := pc.Before
	pc.Before = func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
		if t, ok := cfg.Tools.Get(in.Call.Name); ok && !t.Annotations.Idempotent && !t.Annotations.ReadOnly {
			return &pipeline.BeforeResult{Block: true, Reason: fmt.Sprintf(
				"Tool %s: the orchestrator stopped while this call was in flight; its outcome is unknown, and it was not run again because the tool is not marked idempotent or read_only", in.Call.Name)}, nil
		}
		if before != nil {
			return before(ctx, in)
		}
		return nil, nil
	}
	r.last = msg
	pctx := &pipeline.Context{SystemPrompt: cfg.SystemPrompt, Messages: h, Tools: cfg.Tools}
	batch := pipeline.New(pc).Run(r.ctx, pctx, msg, missing)
	for _, m := range batch.Messages {
		r.s.append(r.id, m)
	}
}
