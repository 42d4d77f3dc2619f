package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A call run under a recording span (the turn's) is a span of its own,
// execute_tool {tool}, from its tool.start to its tool.end. Its context
// goes to the before hook (an approval wait is a span under it) and to the
// executor, which carries it to the worker.

// maxTracedContent bounds the arguments and the result text put on a span.
const maxTracedContent = 8 << 10

// traceCall starts the span of call, when ctx's span records.
func (p *Pipeline) traceCall(ctx context.Context, call agentfleet.ToolCall) (context.Context, trace.Span) {
	if !tracing.Recording(ctx) {
		return ctx, nil
	}
	ctx, span := tracing.Child(ctx, tracing.OpExecuteTool+" "+call.Name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			tracing.GenAIOperationName.String(tracing.OpExecuteTool),
			tracing.GenAIToolName.String(call.Name),
			tracing.GenAIToolCallID.String(call.ID),
			tracing.GenAIToolType.String("function"),
		))
	if p.cfg.TraceContent {
		if b, err := json.Marshal(call.Arguments); err == nil {
			span.SetAttributes(tracing.GenAIToolCallArguments.String(clip(string(b))))
		}
	}
	return ctx, span
}

// endCall ends the span of a call with its outcome.
func (p *Pipeline) endCall(span trace.Span, out *Outcome) {
	if span == nil {
		return
	}
	defer span.End()
	span.SetAttributes(tracing.ToolOutcome.String(string(out.Kind)))
	if r := out.Result; r != nil {
		if r.Worker != "" {
			span.SetAttributes(tracing.Worker.String(r.Worker))
		}
		if r.Attempts > 0 {
			span.SetAttributes(tracing.ToolAttempts.Int(r.Attempts))
		}
		if p.cfg.TraceContent {
			span.SetAttributes(tracing.GenAIToolCallResult.String(clip(resultText(r))))
		}
	}
	if out.IsError {
		span.SetAttributes(tracing.ErrorType.String(string(out.Kind)))
		span.SetStatus(codes.Error, clip(resultText(out.Result)))
	}
}

func resultText(r *agentfleet.ToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		if c.Type == agentfleet.ContentText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// clip shortens s to maxTracedContent bytes, on a rune boundary.
func clip(s string) string {
	if len(s) <= maxTracedContent {
		return s
	}
	n := maxTracedContent
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
