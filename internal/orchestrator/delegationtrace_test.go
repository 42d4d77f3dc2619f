package orchestrator_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceOfChildRun: the child's invoke_agent span is a child of the
// parent's execute_tool span of the call that asked it, the trace context
// going with the ask over NATS (relayed through the input stream when
// durable), and the child's events carry the parent's trace id.
func TestTraceOfChildRun(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(mode(durable), func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			defer tp.Shutdown(context.Background())
			f := startFleet(t, orchestrator.Config{Model: newTeam(), Durable: durable, Tracer: tp.Tracer("test"),
				Profiles: []orchestrator.Profile{{Name: "boss", Agents: []string{"researcher"}}, {Name: "researcher"}}})
			if got := agentfleet.JoinText(f.ask(t, "boss", "t", `{"content":"via researcher: q"}`).Content); got != "ask_researcher=researcher heard: q" {
				t.Fatalf("boss answered %q", got)
			}
			var all []sdktrace.ReadOnlySpan
			bustest.Eventually(t, "the spans of both runs", func() bool {
				all = rec.Ended()
				return len(spansOf(all, "invoke_agent boss", trace.SpanKindInternal)) == 1 && len(spansOf(all, "invoke_agent researcher", trace.SpanKindInternal)) == 1
			})
			call := spansOf(all, "execute_tool ask_researcher", trace.SpanKindInternal)
			if len(call) != 1 {
				t.Fatalf("%d spans of the call", len(call))
			}
			child := spansOf(all, "invoke_agent researcher", trace.SpanKindInternal)[0]
			if child.Parent().SpanID() != call[0].SpanContext().SpanID() || child.SpanContext().TraceID() != call[0].SpanContext().TraceID() {
				t.Errorf("the child's run span is under %s of trace %s, want the call's span %s of trace %s",
					child.Parent().SpanID(), child.SpanContext().TraceID(), call[0].SpanContext().SpanID(), call[0].SpanContext().TraceID())
			}
			end := f.events.wait(t, "the child's run.end", func(e agentfleet.Event) bool {
				return e.Type == agentfleet.EventRunEnd && e.Agent == "researcher"
			})
			if end.TraceID != call[0].SpanContext().TraceID().String() {
				t.Errorf("the child's events have trace_id %q, want the parent's %s", end.TraceID, call[0].SpanContext().TraceID())
			}
		})
	}
}
