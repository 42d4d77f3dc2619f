package tracing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// recentProvider is a real SDK provider that hands every ended span to r.
func recentProvider(t *testing.T, r *tracing.Recent) trace.Tracer {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(r))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp.Tracer("test")
}

// TestRecentKeepsATrace records a trace of a root and two children, one
// failed with an event, and reads it back: by start, with parents,
// attributes, status and events; another trace's spans stay out.
func TestRecentKeepsATrace(t *testing.T) {
	r := tracing.NewRecent(tracing.RecentConfig{Spans: 100})
	tr := recentProvider(t, r)
	ctx, root := tr.Start(context.Background(), "run", trace.WithAttributes(attribute.String("gen_ai.agent.name", "default")))
	_, a := tr.Start(ctx, "execute_tool echo")
	a.End()
	_, b := tr.Start(ctx, "execute_tool fail")
	b.AddEvent("retry", trace.WithAttributes(attribute.Int("agentfleet.tool.attempt", 2)))
	b.RecordError(errors.New("down"))
	b.SetStatus(codes.Error, "the service is down")
	b.End()
	root.End()
	_, other := tr.Start(context.Background(), "other")
	other.End()

	spans := r.Trace(root.SpanContext().TraceID().String())
	if len(spans) != 3 {
		t.Fatalf("kept %d spans of the trace, want 3: %+v", len(spans), spans)
	}
	if spans[0].Name != "run" || spans[0].ParentID != "" || spans[1].ParentID != spans[0].SpanID || spans[2].ParentID != spans[0].SpanID {
		t.Errorf("the tree: %+v", spans)
	}
	if got := spans[0].Attributes; len(got) != 1 || got[0] != (tracing.KeyValue{Key: "gen_ai.agent.name", Value: "default"}) {
		t.Errorf("the root's attributes = %+v", got)
	}
	f := spans[2]
	if f.Status != "error" || f.StatusMessage != "the service is down" || len(f.Events) != 2 || f.Events[0].Name != "retry" || f.Events[0].Attributes[0].Value != "2" {
		t.Errorf("the failed span = %+v", f)
	}
	if f.DurationMS < 0 || f.End.Before(f.Start) {
		t.Errorf("the failed span's duration = %v", f.DurationMS)
	}
	if got := r.Trace("nosuch"); len(got) != 0 {
		t.Errorf("an unknown trace has %d spans", len(got))
	}
}

// TestRecentBounds: the ring keeps at most Spans spans and Bytes bytes,
// dropping the oldest; a value is cut at 1 KiB; a span larger than the
// whole bound is not kept.
func TestRecentBounds(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		r := tracing.NewRecent(tracing.RecentConfig{Spans: 10})
		tr := recentProvider(t, r)
		var ids []string
		for range 25 {
			_, s := tr.Start(context.Background(), "s")
			s.End()
			ids = append(ids, s.SpanContext().TraceID().String())
		}
		if n, _, _, _ := r.Kept(); n != 10 {
			t.Errorf("kept %d spans, want 10", n)
		}
		if len(r.Trace(ids[14])) != 0 || len(r.Trace(ids[15])) != 1 || len(r.Trace(ids[24])) != 1 {
			t.Error("the ring did not keep the last 10")
		}
	})
	t.Run("bytes", func(t *testing.T) {
		r := tracing.NewRecent(tracing.RecentConfig{Spans: 1000, Bytes: 20000})
		tr := recentProvider(t, r)
		for range 200 {
			_, s := tr.Start(context.Background(), "s", trace.WithAttributes(attribute.String("v", strings.Repeat("x", 5000))))
			s.End()
		}
		n, b, _, max := r.Kept()
		if b > max || n == 0 || n > 20000/1024 {
			t.Errorf("kept %d spans of %d bytes, bound %d", n, b, max)
		}
	})
	t.Run("cut and too large", func(t *testing.T) {
		r := tracing.NewRecent(tracing.RecentConfig{Spans: 10, Bytes: 2000})
		tr := recentProvider(t, r)
		_, s := tr.Start(context.Background(), "s", trace.WithAttributes(attribute.String("v", strings.Repeat("é", 3000))))
		s.End()
		got := r.Trace(s.SpanContext().TraceID().String())
		if len(got) != 1 || len(got[0].Attributes[0].Value) > 1024+len("…") || !strings.HasSuffix(got[0].Attributes[0].Value, "…") {
			t.Fatalf("the long value was kept as %d spans %+v", len(got), got)
		}
		var kvs []attribute.KeyValue
		for i := range 64 {
			kvs = append(kvs, attribute.String(strings.Repeat("k", 10)+string(rune('a'+i%26)), strings.Repeat("v", 1000)))
		}
		_, big := tr.Start(context.Background(), "big", trace.WithAttributes(kvs...))
		big.End()
		if got := r.Trace(big.SpanContext().TraceID().String()); len(got) != 0 {
			t.Errorf("a span over the byte bound was kept")
		}
	})
}
