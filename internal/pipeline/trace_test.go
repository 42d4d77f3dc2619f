package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// traced returns a context under a recording span of a real SDK provider,
// that span, and the recorder of the provider's ended spans.
func traced(t *testing.T) (context.Context, trace.Span, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "turn")
	return ctx, span, rec
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// callSpans returns the ended execute_tool spans by tool call id.
func callSpans(t *testing.T, rec *tracetest.SpanRecorder) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if !strings.HasPrefix(s.Name(), "execute_tool ") {
			continue
		}
		id := spanAttrs(s)[tracing.GenAIToolCallID].AsString()
		if _, dup := out[id]; dup {
			t.Errorf("two spans for call %s", id)
		}
		out[id] = s
	}
	return out
}

// TestParallelBatchSpans runs a parallel batch of three calls, all at
// once, under a recording span: each is a span of its own, all three
// siblings under that span, with its tool, call id and outcome; the one
// that failed is an error span.
func TestParallelBatchSpans(t *testing.T) {
	ctx, parent, rec := traced(t)
	started, release := make(chan trace.SpanContext, 3), make(chan struct{})
	hold := func(fail bool) agentfleet.HandlerFunc {
		return func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			started <- trace.SpanContextFromContext(ctx)
			<-release
			if fail {
				return nil, errors.New("disk full at /var/data")
			}
			return agentfleet.TextResult("ok " + c.ID), nil
		}
	}
	store := tools.NewStore("test")
	store.MustRegister(textTool("a", true, hold(false)), textTool("b", true, hold(false)), textTool("bad", true, hold(true)))
	p := pipeline.New(pipeline.Config{Mode: pipeline.Parallel})
	done := make(chan *pipeline.Batch, 1)
	go func() {
		done <- p.Run(ctx, &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("1", "a", `{}`), call("2", "b", `{}`), call("3", "bad", `{}`)})
	}()
	inTool := map[trace.SpanID]bool{}
	for range 3 { // all three run at once: none returns before the others started
		inTool[(<-started).SpanID()] = true
	}
	close(release)
	b := <-done
	if !b.Parallel {
		t.Fatal("the batch did not run in parallel")
	}
	parent.End()

	spans := callSpans(t, rec)
	if len(spans) != 3 {
		t.Fatalf("%d execute_tool spans, want 3", len(spans))
	}
	for id, want := range map[string]struct {
		name, outcome string
		err           bool
	}{
		"1": {"a", "ok", false}, "2": {"b", "ok", false}, "3": {"bad", "error", true},
	} {
		s := spans[id]
		if s == nil {
			t.Errorf("no span for call %s", id)
			continue
		}
		if s.Name() != "execute_tool "+want.name {
			t.Errorf("call %s: span %q", id, s.Name())
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("call %s: parent %s, want the batch's span %s", id, s.Parent().SpanID(), parent.SpanContext().SpanID())
		}
		if !inTool[s.SpanContext().SpanID()] {
			t.Errorf("call %s: the tool did not run under its span %s", id, s.SpanContext().SpanID())
		}
		a := spanAttrs(s)
		if got := a[tracing.GenAIOperationName].AsString(); got != "execute_tool" {
			t.Errorf("call %s: operation %q", id, got)
		}
		if got := a[tracing.GenAIToolName].AsString(); got != want.name {
			t.Errorf("call %s: tool name %q, want %q", id, got, want.name)
		}
		if got := a[tracing.ToolOutcome].AsString(); got != want.outcome {
			t.Errorf("call %s: outcome %q, want %q", id, got, want.outcome)
		}
		if want.err {
			if s.Status().Code != codes.Error || !strings.Contains(s.Status().Description, "disk full") {
				t.Errorf("call %s: status %+v, want Error with the result's text", id, s.Status())
			}
			if got := a[tracing.ErrorType].AsString(); got != "error" {
				t.Errorf("call %s: error.type %q, want error", id, got)
			}
		} else if s.Status().Code == codes.Error {
			t.Errorf("call %s: status %+v", id, s.Status())
		}
		if _, ok := a[tracing.GenAIToolCallArguments]; ok {
			t.Errorf("call %s: arguments on the span without TraceContent", id)
		}
		if _, ok := a[tracing.GenAIToolCallResult]; ok {
			t.Errorf("call %s: result on the span without TraceContent", id)
		}
	}
}

// TestSequentialCallSpans: calls that never reach a tool (unknown tool,
// blocked by the before hook) are spans too, with their outcome, and a
// context without a recording span starts none.
func TestSequentialCallSpans(t *testing.T) {
	ctx, parent, rec := traced(t)
	store := tools.NewStore("test")
	store.MustRegister(textTool("echo", false, echoHandler), textTool("guarded", false, echoHandler))
	p := pipeline.New(pipeline.Config{Before: func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
		if in.Call.Name == "guarded" {
			return &pipeline.BeforeResult{Block: true, Reason: "not allowed"}, nil
		}
		return nil, nil
	}})
	p.Run(ctx, &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("1", "echo", `{}`), call("2", "nope", `{}`), call("3", "guarded", `{}`)})
	parent.End()
	spans := callSpans(t, rec)
	for id, want := range map[string]string{"1": "ok", "2": "not_found", "3": "blocked"} {
		s := spans[id]
		if s == nil {
			t.Errorf("no span for call %s", id)
			continue
		}
		if got := spanAttrs(s)[tracing.ToolOutcome].AsString(); got != want {
			t.Errorf("call %s: outcome %q, want %q", id, got, want)
		}
		if (s.Status().Code == codes.Error) != (want != "ok") {
			t.Errorf("call %s: status %+v", id, s.Status())
		}
	}

	before := len(rec.Ended())
	p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("4", "echo", `{}`)})
	if got := len(rec.Ended()); got != before {
		t.Errorf("a call without a recording span in its context made %d spans", got-before)
	}
}

// TestTraceContent: with TraceContent, the span of a call has its
// arguments (JSON) and its result text, clipped at 8 KiB on a rune
// boundary; without it, neither.
func TestTraceContent(t *testing.T) {
	big := strings.Repeat("é", 5000) // 10000 bytes
	store := tools.NewStore("test")
	store.MustRegister(textTool("echo", false, echoHandler), textTool("big", false, func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
		return agentfleet.TextResult(big), nil
	}))
	for _, content := range []bool{false, true} {
		ctx, parent, rec := traced(t)
		p := pipeline.New(pipeline.Config{TraceContent: content})
		p.Run(ctx, &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("1", "echo", `{"city":"Tokyo"}`), call("2", "big", `{}`)})
		parent.End()
		spans := callSpans(t, rec)
		echo, bigSpan := spanAttrs(spans["1"]), spanAttrs(spans["2"])
		args, hasArgs := echo[tracing.GenAIToolCallArguments]
		res, hasRes := echo[tracing.GenAIToolCallResult]
		if !content {
			if hasArgs || hasRes || len(bigSpan[tracing.GenAIToolCallResult].AsString()) > 0 {
				t.Errorf("TraceContent off: arguments %v result %v on the span", args, res)
			}
			continue
		}
		if got, want := args.AsString(), `{"city":"Tokyo"}`; got != want {
			t.Errorf("arguments = %q, want %q", got, want)
		}
		if got, want := res.AsString(), `{"city":"Tokyo"}`; got != want {
			t.Errorf("result = %q, want %q", got, want)
		}
		clipped := bigSpan[tracing.GenAIToolCallResult].AsString()
		body, ok := strings.CutSuffix(clipped, "…")
		if !ok || len(body) > 8<<10 || len(body) < 8<<10-4 || !utf8.ValidString(clipped) || !strings.HasPrefix(big, body) {
			t.Errorf("a 10000-byte result went on the span as %d bytes (valid UTF-8 %v, ends with … %v), want it clipped to 8 KiB", len(clipped), utf8.ValidString(clipped), ok)
		}
	}
}
