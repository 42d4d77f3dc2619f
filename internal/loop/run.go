package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/window"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
)

// LengthText is the result of a tool call found in a response that the model
// cut off at its token limit; such calls are not executed.
const LengthText = "Tool call not executed: the model's response was cut off at its token limit, so its arguments may be incomplete."

// run is one run of a session: turns of model call and tool batch until the
// model stops, a batch terminates, the turn limit is hit, the model fails or
// the run is aborted; or, when it must be left to another process, until it
// is suspended.
type run struct {
	s      *Session
	ctx    context.Context
	cancel context.CancelCauseFunc
	id     string
	// span is the run's span, when the session traces (trace.go); tctx is
	// the context of the current turn, under its span; traceID goes on
	// every event of a sampled run.
	span     trace.Span
	turnSpan trace.Span
	tctx     context.Context
	traceID  string
	turn     int
	took     []*pending
	usage    *agentfleet.Usage
	last     *agentfleet.AssistantMessage
	resumed  bool
	// origin is the tool call of another agent's run that this run
	// answers (origin.go); nil for a client's run. Every event of the run
	// carries it.
	origin *agentfleet.Parent
	calls  int    // tool calls the run asked for and ran, for the budget
	prio   string // the priority its first input chose, if any

	mu      sync.Mutex
	stopErr error // why the run is suspended
}

// Emit implements agentfleet.EventSink for the pipeline of the current turn.
func (r *run) Emit(e *agentfleet.Event) { r.emit(e) }

func (r *run) emit(e *agentfleet.Event) {
	if e.Parent == nil {
		e.Parent = r.origin
	}
	r.s.emit(r.id, r.turn, r.traceID, e)
}

// store hands m to the store; false means it was not stored and the run is
// suspended.
func (r *run) store(m agentfleet.Message) bool {
	if r.suspended() != nil {
		return false
	}
	if err := r.s.store.Append(r.id, m); err != nil {
		r.suspend(err)
		return false
	}
	return true
}

// append stores m and adds it to the history.
func (r *run) append(m agentfleet.Message) bool {
	if !r.store(m) {
		return false
	}
	r.s.record(r.id, m)
	return true
}

// suspend stops the run without ending it, and the session with it.
func (r *run) suspend(err error) {
	r.mu.Lock()
	if r.stopErr == nil {
		r.stopErr = err
	}
	r.mu.Unlock()
	r.s.Suspend(err)
	r.cancel(&suspendError{err: err})
}

// suspended returns why the run was suspended, or nil.
func (r *run) suspended() error {
	r.mu.Lock()
	err := r.stopErr
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if cause := context.Cause(r.ctx); errors.Is(cause, ErrSuspended) {
		return cause
	}
	return nil
}

// takeSteering takes the steering input queued, linking the run's span to
// the trace context each was sent with.
func (r *run) takeSteering() {
	ps := r.s.takeSteering()
	if r.traced() {
		for _, p := range ps {
			if p.parent.IsValid() {
				r.span.AddLink(trace.Link{SpanContext: p.parent})
			}
		}
	}
	r.take(ps)
}

func (r *run) take(ps []*pending) {
	for _, p := range ps {
		r.took = append(r.took, p)
		if p.resume == "" {
			r.append(p.msg)
		}
	}
}

// execute runs the run and returns its final message, or nil when the run
// was suspended.
func (r *run) execute(first []*pending) *agentfleet.AssistantMessage {
	r.id = uuid.NewString()
	for _, p := range first {
		if p.resume != "" {
			r.id, r.resumed = p.resume, true
			break
		}
	}
	r.origin = r.s.originOf(first, r.id)
	for _, p := range first {
		if p.msg != nil && p.msg.Priority != "" {
			r.prio = p.msg.Priority
			break
		}
	}
	r.startSpan(first)
	if r.resumed {
		r.emit(&agentfleet.Event{Type: agentfleet.EventRunResumed})
	} else {
		r.emit(&agentfleet.Event{Type: agentfleet.EventRunStart})
	}
	final := r.steps(first)
	if r.suspended() == nil {
		final.RunID = r.id
		final.Usage = r.usage
		if final.Timestamp.IsZero() {
			final.Timestamp = time.Now().UTC()
		}
		// The end is stored before run.end says so.
		if err := r.s.store.EndRun(final); err != nil {
			r.suspend(err)
		} else if t, ok := r.s.store.(Trimmer); ok {
			if cut, ok := t.TrimAfter(final); ok {
				r.s.trim(cut)
			}
		}
	}
	if err := r.suspended(); err != nil {
		r.emit(&agentfleet.Event{Type: agentfleet.EventRunSuspended, ErrorMessage: err.Error()})
		r.endSpan(nil, err)
		r.s.sink.RunSuspended(r.id, err)
		return nil
	}
	r.emit(&agentfleet.Event{Type: agentfleet.EventRunEnd, StopReason: final.StopReason, Message: final})
	r.endSpan(final, nil)
	r.s.sink.RunEnded(final)
	return final
}

func (r *run) steps(first []*pending) *agentfleet.AssistantMessage {
	cfg := r.s.cfg
	r.take(first)
	if r.resumed {
		if final := r.settle(); final != nil {
			return final
		}
	}
	for {
		if r.ctx.Err() != nil {
			return r.aborted()
		}
		if r.turn >= cfg.MaxTurns {
			return r.synthetic(agentfleet.StopReasonMaxTurns, fmt.Sprintf("the run reached its limit of %d turns", cfg.MaxTurns))
		}
		// Step 1 of spec section 6: steering enters before every model call.
		r.takeSteering()
		if r.ctx.Err() != nil {
			return r.aborted()
		}
		if final := r.overBudget(); final != nil {
			return final
		}
		r.turn++
		r.beginTurn()
		msg, calls, final := r.callModel()
		if final != nil {
			r.endTurn()
			return final
		}
		if len(calls) == 0 {
			r.endTurn()
			if r.s.hasSteering() {
				continue
			}
			return finalOf(msg)
		}
		if msg.StopReason == agentfleet.StopReasonLength {
			r.refuse(calls)
			r.endTurn()
			return finalOf(msg)
		}
		if final := r.overToolCalls(calls); final != nil {
			r.endTurn()
			return final
		}
		batch := r.runTools(msg, calls)
		r.endTurn()
		switch {
		case batch.Terminate:
			return r.terminated(msg, batch.Messages)
		case r.ctx.Err() != nil:
			return r.aborted()
		}
	}
}

// finalOf is the final message of a run whose last model response msg made
// no tool call it may run.
func finalOf(msg *agentfleet.AssistantMessage) *agentfleet.AssistantMessage {
	final := *msg
	if final.StopReason == agentfleet.StopReasonLength {
		final.ErrorMessage = "the model's response was cut off at its token limit"
	} else {
		final.StopReason = agentfleet.StopReasonStop
	}
	return &final
}

// callModel runs the hooks and the model for one turn. It returns the
// assistant message and its tool calls, or the final message of a run that
// cannot go on. A request the model refuses as longer than its context
// window is prepared again, shorter, and sent once more.
func (r *run) callModel() (*agentfleet.AssistantMessage, []agentfleet.ToolCall, *agentfleet.AssistantMessage) {
	cfg := r.s.cfg
	st := &State{
		Agent: cfg.Agent, Session: r.s.session, RunID: r.id, SystemPrompt: cfg.SystemPrompt,
		Model: cfg.ModelName, Tools: cfg.Tools, Messages: r.s.view(),
		RunStart: r.s.runStart(r.id), Tokens: &r.s.tokens,
	}
	req, final := r.request(st, window.CompactWindow)
	if final != nil {
		return nil, nil, final
	}
	r.emit(&agentfleet.Event{Type: agentfleet.EventMessageStart})
	msg, err := r.complete(req)
	if err != nil && errors.Is(err, window.ErrContextLength) && r.ctx.Err() == nil {
		n := requestBytes(req)
		r.s.tokens.Overflowed(n, cfg.Context.Window)
		st.Refused = max(r.s.tokens.Tokens(n), 1)
		if req, final = r.request(st, window.CompactContextLength); final != nil {
			r.emit(&agentfleet.Event{Type: agentfleet.EventMessageEnd, Message: final})
			return nil, nil, final
		}
		msg, err = r.complete(req)
	}
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
	if msg.Usage != nil {
		r.s.tokens.Calibrate(requestBytes(req), msg.Usage.InputTokens)
	}
	msg.Role = agentfleet.RoleAssistant
	msg.RunID = r.id
	if msg.Timestamp.IsZero() {
		msg.Timestamp = time.Now().UTC()
	}
	calls := ExtractToolCalls(msg)
	r.usage = r.usage.Add(msg.Usage)
	r.last = msg
	if !r.append(msg) {
		return nil, nil, r.aborted()
	}
	r.emit(&agentfleet.Event{Type: agentfleet.EventMessageEnd, Message: msg})
	return msg, calls, nil
}

// request runs the prepare-context and format hooks on st, and emits
// context.compacted, for reason, when the hook left something out.
func (r *run) request(st *State, reason string) (*Request, *agentfleet.AssistantMessage) {
	cfg := r.s.cfg
	st.Compaction = nil
	prepare := cfg.PrepareContext
	if prepare == nil {
		prepare = r.prepareContext
	}
	pctx, err := prepare(r.tctx, st) // a summary's model call is the turn's
	if err != nil {
		return nil, r.failed(fmt.Errorf("prepare context: %w", err))
	}
	if c := st.Compaction; c != nil {
		r.emit(&agentfleet.Event{
			Type: agentfleet.EventContextCompacted, Strategy: c.Strategy, Reason: reason,
			DroppedTurns: c.DroppedTurns, DroppedMessages: c.DroppedMessages, ShortenedResults: c.Shortened,
			TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter,
		})
	}
	req, err := cfg.Format(st, pctx)
	if err != nil {
		return nil, r.failed(fmt.Errorf("format request: %w", err))
	}
	return req, nil
}

// complete calls the model, turning a panic into an error.
func (r *run) complete(req *Request) (msg *agentfleet.AssistantMessage, err error) {
	ctx, span := r.chatSpan(r.tctx, req)
	defer func() { endChat(span, msg, err) }() // after the recover below
	defer func() {
		if v := recover(); v != nil {
			msg, err = nil, fmt.Errorf("model panicked: %v", v)
		}
	}()
	if r.s.cfg.Model == nil {
		return nil, errors.New("no model configured")
	}
	if req.Priority == "" {
		req.Priority = r.priority()
	}
	if req.EstimatedTokens == 0 {
		req.EstimatedTokens = r.s.tokens.Tokens(requestBytes(req))
	}
	ctx = WithNotify(ctx, r.emit)
	msg, err = r.s.cfg.Model.Complete(ctx, req, func(delta string) {
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
	return r.runBatch(msg, calls, nil)
}

// runBatch runs calls of msg through the pipeline, with an extra before hook
// in front of the configured one. Each result is stored as its call ends,
// and added to the history in call order once the batch is done.
func (r *run) runBatch(msg *agentfleet.AssistantMessage, calls []agentfleet.ToolCall, first pipeline.BeforeHook) *pipeline.Batch {
	cfg := r.s.cfg
	pc := r.s.pipelineConfig()
	pc.Sink, pc.Agent, pc.Session, pc.RunID = r, cfg.Agent, r.s.session, r.id
	pc.OnOutcome = func(o *pipeline.Outcome) { r.store(o.Message()) }
	pc.Before = pipeline.Chain(first, pc.Before)
	pctx := &pipeline.Context{SystemPrompt: cfg.SystemPrompt, Messages: r.s.view(), Tools: cfg.Tools}
	batch := pipeline.New(pc).Run(r.withLeft(r.tctx), pctx, msg, calls)
	for _, m := range batch.Messages {
		r.s.record(r.id, m)
	}
	r.countResults(batch.Messages)
	return batch
}

// refuse answers the calls of a truncated response with error results.
func (r *run) refuse(calls []agentfleet.ToolCall) {
	for _, c := range calls {
		r.emit(&agentfleet.Event{Type: agentfleet.EventToolStart, ToolCallID: c.ID, ToolName: c.Name, Arguments: c.Arguments})
		o := &pipeline.Outcome{Call: c, Result: agentfleet.ErrorResult(LengthText), IsError: true, Kind: pipeline.Truncated}
		r.emit(&agentfleet.Event{Type: agentfleet.EventToolEnd, ToolCallID: c.ID, ToolName: c.Name, Result: o.Result, IsError: true, Outcome: string(pipeline.Truncated)})
		r.append(o.Message())
	}
}

// terminated builds the final message of a batch whose every result asked
// to terminate (spec section 10).
func (r *run) terminated(msg *agentfleet.AssistantMessage, results []*agentfleet.ToolResultMessage) *agentfleet.AssistantMessage {
	content := []agentfleet.Content{agentfleet.Text("Tool execution completed.")}
	failed := false
	for _, m := range results {
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

// UnknownOutcomeText is the result of a call of a tool that is neither
// idempotent nor read-only, found in flight when a run resumes: it may have
// run, so it is not run again.
const UnknownOutcomeText = "Tool %s: the orchestrator stopped while this call was in flight; its outcome is unknown, and it was not run again because the tool is not marked idempotent or read_only"

// settle takes up a resumed run where its stored records end: it counts the
// run's turns and usage, answers the tool calls of its last model response
// that have no result (calls of idempotent or read-only tools run again, the
// others get an error result saying their outcome is unknown), and returns
// the final message when the records show the run had ended its work (a
// final answer, a terminating batch, the turn limit); nil means the turns go
// on. Only the run's own records count, however the session went on. A
// call that the Store says never ran (Unexecuted) goes through the pipeline
// again (a call waiting for approval waits again).
func (r *run) settle() *agentfleet.AssistantMessage {
	var (
		mine     []agentfleet.Message
		lastAsst = -1
	)
	for _, e := range r.s.entries() {
		if e.RunID != r.id {
			continue
		}
		mine = append(mine, e.Message)
		if a, ok := e.Message.(*agentfleet.AssistantMessage); ok {
			lastAsst = len(mine) - 1
			r.turn++
			r.usage = r.usage.Add(a.Usage)
			r.calls += len(a.ToolCalls())
		}
		if m, ok := e.Message.(*agentfleet.ToolResultMessage); ok {
			r.usage = r.usage.Add(m.Usage)
		}
	}
	if lastAsst < 0 {
		return nil // only its input is stored: the first model call is next
	}
	for _, m := range mine[lastAsst+1:] {
		if _, ok := m.(*agentfleet.UserMessage); ok {
			return nil // steering arrived after the response: the model is next
		}
	}
	msg := mine[lastAsst].(*agentfleet.AssistantMessage)
	r.last = msg
	calls := ExtractToolCalls(&agentfleet.AssistantMessage{Content: slices.Clone(msg.Content)})
	if len(calls) == 0 {
		return finalOf(msg) // the final answer is stored: the run is over
	}
	results := map[string]*agentfleet.ToolResultMessage{}
	for _, m := range mine[lastAsst+1:] {
		if tr, ok := m.(*agentfleet.ToolResultMessage); ok {
			results[tr.ToolCallID] = tr
		}
	}
	var missing []agentfleet.ToolCall
	for _, c := range calls {
		if results[c.ID] == nil {
			missing = append(missing, c)
		}
	}
	if msg.StopReason == agentfleet.StopReasonLength {
		r.refuse(missing)
		return finalOf(msg)
	}
	if len(missing) > 0 {
		tools, store := r.s.cfg.Tools, r.s.store
		batch := r.runBatch(msg, missing, func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
			if store.Unexecuted(in.Call.ID) {
				return nil, nil
			}
			if t, ok := tools.Get(in.Call.Name); ok && !t.Annotations.Idempotent && !t.Annotations.ReadOnly {
				if recoverCall := r.s.cfg.Recover; recoverCall != nil {
					if res, err := recoverCall(ctx, in); err == nil && res != nil {
						return res, nil
					}
				}
				return &pipeline.BeforeResult{Block: true, Reason: fmt.Sprintf(UnknownOutcomeText, in.Call.Name)}, nil
			}
			return nil, nil
		})
		for _, m := range batch.Messages {
			results[m.ToolCallID] = m
		}
		r.s.orderResultsOf()
	}
	if r.ctx.Err() != nil {
		return r.aborted()
	}
	ordered := make([]*agentfleet.ToolResultMessage, 0, len(calls))
	terminate := true
	for _, c := range calls {
		tr := results[c.ID]
		ordered = append(ordered, tr)
		terminate = terminate && tr.Terminate
	}
	if terminate {
		return r.terminated(msg, ordered)
	}
	return nil
}
