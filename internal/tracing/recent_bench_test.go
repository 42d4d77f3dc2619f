package tracing_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkSpanEnd records a span shaped like a tool call's (8
// attributes, one event) with the batch exporter alone, as with otlp, and
// with the spans also kept for the trace view: the cost of keeping, side
// by side.
func BenchmarkSpanEnd(b *testing.B) {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "calculator"),
		attribute.String("gen_ai.tool.call.id", "call_0123456789abcdef"), attribute.String("gen_ai.tool.type", "function"),
		attribute.String("agentfleet.tool.outcome", "ok"), attribute.String("agentfleet.worker", "toolworker/NUIDPREFIXAAAA0000000001"),
		attribute.Int("agentfleet.tool.attempts", 1), attribute.Int("agentfleet.turn", 2),
	}
	for _, keep := range []bool{false, true} {
		name := "batch"
		if keep {
			name = "batch+recent"
		}
		b.Run(name, func(b *testing.B) {
			opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(tracetest.NewNoopExporter())}
			if keep {
				opts = append(opts, sdktrace.WithSyncer(tracing.NewRecent(tracing.RecentConfig{Spans: 10000})))
			}
			tp := sdktrace.NewTracerProvider(opts...)
			defer tp.Shutdown(context.Background())
			tr := tp.Tracer("bench")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, s := tr.Start(ctx, "execute_tool calculator", trace.WithAttributes(attrs...))
				s.AddEvent("attempt", trace.WithAttributes(attribute.Int("agentfleet.tool.attempt", 1)))
				s.End()
			}
		})
	}
}
