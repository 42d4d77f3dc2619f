package toolrpc

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A worker with ServerConfig.Tracer set records each call it runs as a
// span, execute_tool {tool} of kind server, under the trace context of the
// request: the child of the orchestrator's span of the call. It starts when
// the request arrived and ends when the final frame is out, and says how
// long the call waited for its goroutine and how long the tool ran. The
// tool's context holds the span, for tools that trace what they do.

// traceCall returns the base context of a call, holding its span when the
// worker traces.
func (s *ToolServer) traceCall(h nats.Header, creq *wire.CallRequest, start time.Time) (context.Context, trace.Span) {
	if s.cfg.Tracer == nil {
		return context.Background(), nil
	}
	ctx := tracing.Extract(context.Background(), h)
	return s.cfg.Tracer.Start(ctx, tracing.OpExecuteTool+" "+creq.Tool,
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
		trace.WithAttributes(
			tracing.GenAIOperationName.String(tracing.OpExecuteTool),
			tracing.GenAIToolName.String(creq.Tool),
			tracing.GenAIToolCallID.String(creq.ID),
			tracing.GenAIAgentName.String(creq.Agent),
			tracing.GenAIConversationID.String(creq.Session),
			tracing.RunID.String(creq.RunID),
			tracing.ToolAttempt.Int(max(creq.Attempt, 1)),
			tracing.Worker.String(s.name),
		))
}

// endSpan ends the call's span with its outcome, once the final frame is
// out (or the handler left its goroutine).
func (c *call) endSpan() {
	span := c.span
	if span == nil {
		return
	}
	c.span = nil
	if !span.IsRecording() {
		span.End() // sampled out: nothing to write on it
		return
	}
	end := time.Now()
	began := c.began
	if began.IsZero() {
		began = end
	}
	outcome := c.outcome
	if outcome == "" {
		outcome = "exited" // runtime.Goexit in the handler
	}
	span.SetAttributes(
		tracing.QueueWaitMS.Float64(ms(began.Sub(c.start))),
		tracing.ExecutionMS.Float64(ms(end.Sub(began))),
		tracing.ToolOutcome.String(outcome),
	)
	if outcome != "ok" {
		span.SetAttributes(tracing.ErrorType.String(outcome))
		span.SetStatus(codes.Error, outcome)
	}
	span.End(trace.WithTimestamp(end))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
