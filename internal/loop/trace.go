package loop

import (
	"context"
	"errors"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A run with Config.Tracer set is one span, invoke_agent {agent}, under
// the trace context its first input carried, linked to that of the other
// input it took. Each turn is a span under it, and the turn's model calls
// (chat {model}) and tool calls (execute_tool {tool}, started by the
// pipeline) are spans under the turn.

// startSpan starts the run's span, if the session traces.
func (r *run) startSpan(first []*pending) {
	r.tctx = r.ctx
	t := r.s.cfg.Tracer
	if t == nil {
		return
	}
	cfg := r.s.cfg
	ctx := r.ctx
	var links []trace.Link
	for _, p := range first {
		switch {
		case !p.parent.IsValid():
		case !trace.SpanContextFromContext(ctx).IsValid():
			ctx = trace.ContextWithRemoteSpanContext(ctx, p.parent)
		default:
			links = append(links, trace.Link{SpanContext: p.parent})
		}
	}
	r.ctx, r.span = t.Start(ctx, spanName(tracing.OpInvokeAgent, cfg.Agent),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithLinks(links...),
		trace.WithAttributes(
			tracing.GenAIOperationName.String(tracing.OpInvokeAgent),
			tracing.GenAIAgentName.String(cfg.Agent),
			tracing.GenAIConversationID.String(r.s.session),
			tracing.GenAIRequestModel.String(cfg.ModelName),
			tracing.RunID.String(r.id),
			tracing.RunResumed.Bool(r.resumed),
		), trace.WithAttributes(cfg.TraceAttributes...))
	r.tctx = r.ctx
	if sc := r.span.SpanContext(); sc.IsSampled() {
		r.traceID = sc.TraceID().String()
	}
}

// traced reports whether the run's span records.
func (r *run) traced() bool { return r.span != nil && r.span.IsRecording() }

// endSpan ends the run's span with its final message, or as suspended
// (final nil).
func (r *run) endSpan(final *agentfleet.AssistantMessage, suspended error) {
	if r.span == nil {
		return
	}
	defer r.span.End()
	if !r.span.IsRecording() {
		return
	}
	if final == nil {
		r.span.SetAttributes(tracing.StopReason.String("suspended"))
		if suspended != nil {
			r.span.AddEvent("suspended", trace.WithAttributes(tracing.Reason.String(suspended.Error())))
		}
		return
	}
	r.span.SetAttributes(tracing.StopReason.String(string(final.StopReason)))
	if u := r.usage; u != nil {
		r.span.SetAttributes(tracing.GenAIUsageInputTokens.Int(u.InputTokens), tracing.GenAIUsageOutputTokens.Int(u.OutputTokens))
	}
	if final.StopReason == agentfleet.StopReasonError {
		r.span.SetAttributes(tracing.ErrorType.String(string(final.StopReason)))
		r.span.SetStatus(codes.Error, final.ErrorMessage)
	}
}

// beginTurn emits turn.start and starts the turn's span.
func (r *run) beginTurn() {
	r.emit(&agentfleet.Event{Type: agentfleet.EventTurnStart})
	if r.traced() {
		r.tctx, r.turnSpan = tracing.Child(r.ctx, "turn", trace.WithAttributes(tracing.Turn.Int(r.turn)))
	}
}

// endTurn emits turn.end and ends the turn's span.
func (r *run) endTurn() {
	r.emit(&agentfleet.Event{Type: agentfleet.EventTurnEnd})
	if r.turnSpan != nil {
		r.turnSpan.End()
		r.turnSpan, r.tctx = nil, r.ctx
	}
}

// chatSpan starts the span of one model call, when the run records; the
// model adapter injects its context into the request it sends.
func (r *run) chatSpan(ctx context.Context, req *Request) (context.Context, trace.Span) {
	if !r.traced() || !tracing.Recording(ctx) {
		return ctx, nil
	}
	return tracing.Child(ctx, spanName(tracing.OpChat, req.Model),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			tracing.GenAIOperationName.String(tracing.OpChat),
			tracing.GenAIRequestModel.String(req.Model),
		))
}

// endChat ends the span of a model call with its response or error.
func endChat(span trace.Span, msg *agentfleet.AssistantMessage, err error) {
	if span == nil {
		return
	}
	defer span.End()
	if err == nil && msg == nil {
		err = errors.New("model returned no message")
	}
	if err != nil {
		span.SetAttributes(tracing.ErrorType.String(errorClass(err)))
		span.SetStatus(codes.Error, err.Error())
		return
	}
	span.SetAttributes(
		tracing.GenAIResponseModel.String(msg.Model),
		tracing.GenAIResponseFinishReasons.StringSlice([]string{finishReason(msg.StopReason)}),
	)
	if msg.Provider != "" {
		span.SetAttributes(tracing.GenAIProviderName.String(msg.Provider))
	}
	if u := msg.Usage; u != nil {
		span.SetAttributes(tracing.GenAIUsageInputTokens.Int(u.InputTokens), tracing.GenAIUsageOutputTokens.Int(u.OutputTokens))
	}
}

// finishReason is the OpenAI name of a stop reason, which the conventions
// use.
func finishReason(s agentfleet.StopReason) string {
	switch s {
	case agentfleet.StopReasonToolUse:
		return "tool_calls"
	case agentfleet.StopReasonStop:
		return "stop"
	}
	return string(s)
}

// errorClass is the error.type of a failed model call: the class the
// adapter gave it, else the Go type.
func errorClass(err error) string {
	var c interface{ ErrorClass() string }
	if errors.As(err, &c) && c.ErrorClass() != "" {
		return c.ErrorClass()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "canceled"
	}
	return "_OTHER"
}

func spanName(op, name string) string {
	if name == "" {
		return op
	}
	return op + " " + name
}
