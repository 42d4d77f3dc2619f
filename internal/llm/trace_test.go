package llm

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func newTraceRecorder(t *testing.T, opts ...sdktrace.TracerProviderOption) (trace.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}, opts...)...)
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp.Tracer("test"), rec
}

// requestContext is the trace context an HTTP request to the model
// carried.
func requestContext(r llmtest.Request) trace.SpanContext {
	ctx := tracing.Propagator.Extract(context.Background(), propagation.HeaderCarrier(r.Header))
	return trace.SpanContextFromContext(ctx)
}

func eventValue(e sdktrace.Event, key attribute.Key) attribute.Value {
	for _, kv := range e.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestCompleteRetryTraced fails the first attempt of a traced call with a
// retryable status: the span of the call gets a retry event with the
// attempt, the class and the status, and both HTTP requests carry the
// span's trace context.
func TestCompleteRetryTraced(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		wantClass string
	}{
		{"server error", 500, ClassServer},
		{"rate limit", 429, ClassRateLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tracer, rec := newTraceRecorder(t)
			srv := llmtest.NewServer(t)
			srv.Enqueue(llmtest.Error(tc.status, ""), llmtest.TextReply("hello").Response())
			c := newTestClient(t, srv, nil)
			ctx, span := tracer.Start(context.Background(), "chat test-model")
			msg, err := c.Complete(ctx, userRequest("hi"), nil)
			span.End()
			if err != nil || agentfleet.JoinText(msg.Content) != "hello" {
				t.Fatalf("Complete = %v, %v", msg, err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				sc := requestContext(r)
				if sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() || !sc.IsSampled() {
					t.Errorf("request %d: traceparent %q, want the span %s of trace %s", i+1, r.Header.Get("traceparent"), span.SpanContext().SpanID(), span.SpanContext().TraceID())
				}
			}
			ended := rec.Ended()
			if len(ended) != 1 {
				t.Fatalf("%d spans", len(ended))
			}
			var retries []sdktrace.Event
			for _, e := range ended[0].Events() {
				if e.Name == tracing.EventRetry {
					retries = append(retries, e)
				}
			}
			if len(retries) != 1 {
				t.Fatalf("events %+v, want one retry", ended[0].Events())
			}
			e := retries[0]
			if got := eventValue(e, "attempt").AsInt64(); got != 2 {
				t.Errorf("retry attempt %d, want 2", got)
			}
			if got := eventValue(e, tracing.ErrorType).AsString(); got != tc.wantClass {
				t.Errorf("retry error.type %q, want %q", got, tc.wantClass)
			}
			if got := eventValue(e, "http.response.status_code").AsInt64(); got != int64(tc.status) {
				t.Errorf("retry status %d, want %d", got, tc.status)
			}
		})
	}
}

// TestCompleteUntraced: without a span in the context, the request has
// no traceparent; under a sampled-out one, it says so.
func TestCompleteUntraced(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.TextReply("a").Response(), llmtest.TextReply("b").Response())
	c := newTestClient(t, srv, nil)
	if _, err := c.Complete(context.Background(), userRequest("hi"), nil); err != nil {
		t.Fatal(err)
	}
	tracer, rec := newTraceRecorder(t, sdktrace.WithSampler(sdktrace.NeverSample()))
	ctx, span := tracer.Start(context.Background(), "chat")
	if _, err := c.Complete(ctx, userRequest("hi"), nil); err != nil {
		t.Fatal(err)
	}
	span.End()
	reqs := srv.Requests()
	if h := reqs[0].Header.Get("traceparent"); h != "" {
		t.Errorf("untraced request has traceparent %q", h)
	}
	if sc := requestContext(reqs[1]); !sc.IsValid() || sc.IsSampled() {
		t.Errorf("request of a sampled-out call: traceparent %q, want an unsampled one", reqs[1].Header.Get("traceparent"))
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans recorded", n)
	}
}

// TestLoopChatSpanReachesTheModel runs a traced session on the real
// client: the model server gets the chat span's context, and a call that
// failed for good is an error span of the client's class.
func TestLoopChatSpanReachesTheModel(t *testing.T) {
	tracer, rec := newTraceRecorder(t)
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.TextReply("hello").Response())
	c := newTestClient(t, srv, nil)
	s := loop.New(loop.Config{Agent: "a", Session: "s", Model: c, ModelName: "test-model", Tools: tools.NewStore("a"), Tracer: tracer})
	final := <-s.Send(agentfleet.NewUserMessage("hi"))
	if final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("final %s %q", final.StopReason, final.ErrorMessage)
	}
	var chat sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "chat test-model" {
			chat = sp
		}
	}
	if chat == nil {
		t.Fatal("no chat span")
	}
	sc := requestContext(srv.Requests()[0])
	if sc.TraceID() != chat.SpanContext().TraceID() || sc.SpanID() != chat.SpanContext().SpanID() {
		t.Errorf("model request traceparent %q, want the chat span %s of trace %s", srv.Requests()[0].Header.Get("traceparent"), chat.SpanContext().SpanID(), chat.SpanContext().TraceID())
	}
	var provider string
	for _, kv := range chat.Attributes() {
		if kv.Key == tracing.GenAIResponseModel && kv.Value.AsString() == "" {
			t.Error("empty response model")
		}
		if kv.Key == tracing.GenAIProviderName {
			provider = kv.Value.AsString()
		}
	}
	if provider == "" {
		t.Errorf("chat span has no %s: %v", tracing.GenAIProviderName, chat.Attributes())
	}

	// Three failures: the client gives up, and the chat span says why.
	srv.Enqueue(llmtest.Error(500, ""), llmtest.Error(500, ""), llmtest.Error(500, ""))
	final = <-s.Send(agentfleet.NewUserMessage("again"))
	if final.StopReason != agentfleet.StopReasonError {
		t.Fatalf("final %s, want error", final.StopReason)
	}
	var failed sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "chat test-model" && sp.Status().Code == codes.Error {
			failed = sp
		}
	}
	if failed == nil {
		t.Fatal("no failed chat span")
	}
	retries := 0
	for _, e := range failed.Events() {
		if e.Name == tracing.EventRetry {
			retries++
		}
	}
	if retries != 2 {
		t.Errorf("%d retry events for 3 attempts, want 2", retries)
	}
	errorType := ""
	for _, kv := range failed.Attributes() {
		if kv.Key == tracing.ErrorType {
			errorType = kv.Value.AsString()
		}
	}
	if errorType != ClassServer {
		t.Errorf("error.type %q, want %q", errorType, ClassServer)
	}
}
