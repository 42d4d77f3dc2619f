package loop_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// newRecorder returns a tracer of a real SDK provider whose ended spans
// go to the returned recorder.
func newRecorder(t *testing.T, opts ...sdktrace.TracerProviderOption) (trace.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}, opts...)...)
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp.Tracer("test"), rec
}

// remoteParent is a context holding a span context sent by a client.
func remoteParent(t *testing.T, traceHex, spanHex string, sampled bool) (context.Context, trace.SpanContext) {
	t.Helper()
	tid, err := trace.TraceIDFromHex(traceHex)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex(spanHex)
	if err != nil {
		t.Fatal(err)
	}
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return trace.ContextWithRemoteSpanContext(context.Background(), sc), sc
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// wantAttr fails t unless span s has key with the value want (its Emit
// form: a string, an int, a bool, or a slice as JSON, `["a","b"]`).
func wantAttr(t *testing.T, s sdktrace.ReadOnlySpan, key attribute.Key, want string) {
	t.Helper()
	v, ok := attr(s, key)
	if !ok {
		t.Errorf("span %s has no %s (attributes %v)", s.Name(), key, s.Attributes())
		return
	}
	if got := v.Emit(); got != want {
		t.Errorf("span %s: %s = %s, want %s", s.Name(), key, got, want)
	}
}

func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func dump(spans []sdktrace.ReadOnlySpan) string {
	out := ""
	for _, s := range spans {
		out += s.Name() + " span=" + s.SpanContext().SpanID().String() + " parent=" + s.Parent().SpanID().String() + "\n"
	}
	return out
}

// TestRunTrace runs a traced run that calls a tool and then answers, sent
// under a client's trace context: the run's span is the child of the
// client's span, its turns are under it, and each turn has its model call
// and tool calls under it, with the GenAI attributes; the model and the
// tool see their own span in their context; every event of the run
// carries the trace id.
func TestRunTrace(t *testing.T) {
	tracer, rec := newRecorder(t)
	ctx, parent := remoteParent(t, "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true)
	var modelSpans []trace.SpanContext
	var toolSpan trace.SpanContext
	spy := func(s step) step {
		return func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
			modelSpans = append(modelSpans, trace.SpanContextFromContext(ctx))
			return s(ctx, req, onDelta)
		}
	}
	get := tool("get", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		toolSpan = trace.SpanContextFromContext(ctx)
		return agentfleet.TextResult("value"), nil
	})
	m := &script{steps: []step{spy(use(`get {"k":"v"}`)), spy(say("done"))}}
	s, ev := newSession(t, m, loop.Config{Tracer: tracer, ModelName: "m1"}, get)
	final := wait(t, s.SendContext(ctx, agentfleet.NewUserMessage("go")))

	spans := rec.Ended()
	runs, turns, chats, calls := named(spans, "invoke_agent test"), named(spans, "turn"), named(spans, "chat m1"), named(spans, "execute_tool get")
	if len(runs) != 1 || len(turns) != 2 || len(chats) != 2 || len(calls) != 1 || len(spans) != 6 {
		t.Fatalf("spans:\n%s\nwant one run, two turns, two chats, one tool call", dump(spans))
	}
	run := runs[0]
	if run.Parent().SpanID() != parent.SpanID() || run.SpanContext().TraceID() != parent.TraceID() || !run.Parent().IsRemote() {
		t.Errorf("run span parent = %v in trace %s, want the remote %v", run.Parent(), run.SpanContext().TraceID(), parent)
	}
	traceID := parent.TraceID()
	for _, sp := range spans {
		if sp.SpanContext().TraceID() != traceID {
			t.Errorf("span %s in trace %s, want %s", sp.Name(), sp.SpanContext().TraceID(), traceID)
		}
	}
	wantAttr(t, run, tracing.GenAIOperationName, "invoke_agent")
	wantAttr(t, run, tracing.GenAIAgentName, "test")
	wantAttr(t, run, tracing.GenAIConversationID, "s1")
	wantAttr(t, run, tracing.GenAIRequestModel, "m1")
	wantAttr(t, run, tracing.RunID, final.RunID)
	wantAttr(t, run, tracing.StopReason, "stop")
	wantAttr(t, run, tracing.GenAIUsageInputTokens, "10")
	wantAttr(t, run, tracing.GenAIUsageOutputTokens, "5")
	if run.Status().Code == codes.Error {
		t.Errorf("run span status %v", run.Status())
	}

	slices.SortFunc(turns, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	for i, turn := range turns {
		if turn.Parent().SpanID() != run.SpanContext().SpanID() {
			t.Errorf("turn %d parent = %s, want the run span %s", i+1, turn.Parent().SpanID(), run.SpanContext().SpanID())
		}
		wantAttr(t, turn, tracing.Turn, []string{"1", "2"}[i])
	}
	for i, chat := range chats { // in the order they ended, which is the order of the turns
		turn := turns[i]
		if chat.Parent().SpanID() != turn.SpanContext().SpanID() {
			t.Errorf("chat %d parent = %s, want turn %d %s", i+1, chat.Parent().SpanID(), i+1, turn.SpanContext().SpanID())
		}
		if chat.SpanKind() != trace.SpanKindClient {
			t.Errorf("chat %d kind = %v, want client", i+1, chat.SpanKind())
		}
		if got := modelSpans[i].SpanID(); got != chat.SpanContext().SpanID() {
			t.Errorf("model call %d ran under span %s, want its chat span %s", i+1, got, chat.SpanContext().SpanID())
		}
		wantAttr(t, chat, tracing.GenAIOperationName, "chat")
		wantAttr(t, chat, tracing.GenAIRequestModel, "m1")
		wantAttr(t, chat, tracing.GenAIResponseModel, "scripted")
		wantAttr(t, chat, tracing.GenAIResponseFinishReasons, []string{`["tool_calls"]`, `["stop"]`}[i])
	}
	wantAttr(t, chats[1], tracing.GenAIUsageInputTokens, "10")
	wantAttr(t, chats[1], tracing.GenAIUsageOutputTokens, "5")

	call := calls[0]
	if call.Parent().SpanID() != turns[0].SpanContext().SpanID() {
		t.Errorf("tool call parent = %s, want turn 1 %s", call.Parent().SpanID(), turns[0].SpanContext().SpanID())
	}
	if toolSpan.SpanID() != call.SpanContext().SpanID() {
		t.Errorf("tool ran under span %s, want its execute_tool span %s", toolSpan.SpanID(), call.SpanContext().SpanID())
	}
	wantAttr(t, call, tracing.GenAIOperationName, "execute_tool")
	wantAttr(t, call, tracing.GenAIToolName, "get")
	wantAttr(t, call, tracing.ToolOutcome, "ok")
	callID := m.request(1).Messages[1].(*agentfleet.AssistantMessage).ToolCalls()[0].ID
	wantAttr(t, call, tracing.GenAIToolCallID, callID)

	events := ev.list()
	if len(events) == 0 {
		t.Fatal("no events")
	}
	for _, e := range events {
		if e.TraceID != traceID.String() {
			t.Errorf("event %d %s trace_id = %q, want %s", e.Seq, e.Type, e.TraceID, traceID)
		}
	}
}

// TestRunTraceLinksSteering: a message steered into a running run under
// another trace context is a link of the run's span, not its parent.
func TestRunTraceLinksSteering(t *testing.T) {
	tracer, rec := newRecorder(t)
	inTool, release := make(chan struct{}), make(chan struct{})
	block := tool("block", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		close(inTool)
		<-release
		return agentfleet.TextResult("unblocked"), nil
	})
	m := &script{steps: []step{use(`block {}`), say("steered")}}
	s, _ := newSession(t, m, loop.Config{Tracer: tracer}, block)
	first, parent := remoteParent(t, "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true)
	second, steer := remoteParent(t, "11111111111111111111111111111111", "2222222222222222", true)
	reply := s.SendContext(first, agentfleet.NewUserMessage("first"))
	<-inTool
	steered := s.SteerContext(second, agentfleet.NewUserMessage("actually"))
	close(release)
	if wait(t, reply) != wait(t, steered) {
		t.Fatal("the steering message went to another run")
	}
	runs := named(rec.Ended(), "invoke_agent test")
	if len(runs) != 1 {
		t.Fatalf("spans:\n%s", dump(rec.Ended()))
	}
	run := runs[0]
	if run.Parent().SpanID() != parent.SpanID() {
		t.Errorf("run parent = %s, want the first message's %s", run.Parent().SpanID(), parent.SpanID())
	}
	links := run.Links()
	if len(links) != 1 || !links[0].SpanContext.Equal(steer) {
		t.Errorf("run links = %+v, want one to the steering message's %v", links, steer)
	}
}

// TestRunTraceOff: without a tracer, or with a trace sampled out, nothing
// is recorded, events carry no trace id, and the model's context has no
// span that records.
func TestRunTraceOff(t *testing.T) {
	unsampled, _ := remoteParent(t, "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", false)
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler // nil: no tracer
		ctx     context.Context
	}{
		{name: "no tracer", ctx: context.Background()},
		{name: "never sample", sampler: sdktrace.NeverSample(), ctx: context.Background()},
		{name: "unsampled parent", sampler: sdktrace.ParentBased(sdktrace.AlwaysSample()), ctx: unsampled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg loop.Config
			var rec *tracetest.SpanRecorder
			if tc.sampler != nil {
				cfg.Tracer, rec = newRecorder(t, sdktrace.WithSampler(tc.sampler))
			}
			var recording atomic.Bool
			get := tool("get", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
				recording.CompareAndSwap(false, trace.SpanFromContext(ctx).IsRecording())
				return agentfleet.TextResult("value"), nil
			})
			m := &script{steps: []step{use(`get {}`), func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
				recording.CompareAndSwap(false, trace.SpanFromContext(ctx).IsRecording())
				return say("done")(ctx, req, onDelta)
			}}}
			s, ev := newSession(t, m, cfg, get)
			wait(t, s.SendContext(tc.ctx, agentfleet.NewUserMessage("go")))
			if rec != nil {
				if spans := rec.Ended(); len(spans) != 0 {
					t.Errorf("recorded spans:\n%s", dump(spans))
				}
			}
			if recording.Load() {
				t.Error("the model or the tool ran under a recording span")
			}
			for _, e := range ev.list() {
				if e.TraceID != "" {
					t.Errorf("event %d %s has trace_id %q", e.Seq, e.Type, e.TraceID)
				}
			}
		})
	}
}

// classedError is a model failure with a class, as the llm adapter's.
type classedError struct{ class string }

func (e *classedError) Error() string      { return "model: " + e.class }
func (e *classedError) ErrorClass() string { return e.class }

// TestRunTraceModelError: a failed model call is an error span with the
// failure's class as error.type, and so is the run it ended.
func TestRunTraceModelError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"classed", &classedError{"rate_limit"}, "rate_limit"},
		{"wrapped", errors.Join(errors.New("context"), &classedError{"server_error"}), "server_error"},
		{"plain", errors.New("boom"), "_OTHER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tracer, rec := newRecorder(t)
			m := &script{steps: []step{func(context.Context, *loop.Request, loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
				return nil, tc.err
			}}}
			s, _ := newSession(t, m, loop.Config{Tracer: tracer, ModelName: "m1"})
			final := wait(t, s.Send(agentfleet.NewUserMessage("go")))
			if final.StopReason != agentfleet.StopReasonError {
				t.Fatalf("stop reason %s, want error", final.StopReason)
			}
			spans := rec.Ended()
			chats, runs := named(spans, "chat m1"), named(spans, "invoke_agent test")
			if len(chats) != 1 || len(runs) != 1 {
				t.Fatalf("spans:\n%s", dump(spans))
			}
			chat := chats[0]
			if chat.Status().Code != codes.Error || chat.Status().Description != tc.err.Error() {
				t.Errorf("chat status = %+v, want Error %q", chat.Status(), tc.err.Error())
			}
			wantAttr(t, chat, tracing.ErrorType, tc.want)
			if _, ok := attr(chat, tracing.GenAIResponseModel); ok {
				t.Error("a failed chat has a response model")
			}
			run := runs[0]
			if run.Status().Code != codes.Error {
				t.Errorf("run status = %+v, want Error", run.Status())
			}
			wantAttr(t, run, tracing.StopReason, "error")
			wantAttr(t, run, tracing.ErrorType, "error")
			// A run without a parent is a root.
			if run.Parent().IsValid() {
				t.Errorf("run parent = %v, want none", run.Parent())
			}
		})
	}
}

// TestRunTraceSuspended: a run suspended when its response could not be
// stored ends its span as suspended, with an event saying why, and its
// turn's span ends too.
func TestRunTraceSuspended(t *testing.T) {
	tracer, rec := newRecorder(t)
	m := &script{steps: []step{use("get {}")}}
	s, _ := newSession(t, m, loop.Config{Tracer: tracer, Store: storeFuncs{append: func(runID string, msg agentfleet.Message) error {
		if _, ok := msg.(*agentfleet.AssistantMessage); ok {
			return errors.New("fenced")
		}
		return nil
	}}}, tool("get", false, text("value")))
	if final := wait(t, s.Send(agentfleet.NewUserMessage("go"))); final != nil {
		t.Fatalf("final = %+v, want a suspended run", final)
	}
	spans := rec.Ended()
	runs := named(spans, "invoke_agent test")
	if len(runs) != 1 || len(named(spans, "turn")) != 1 || len(named(spans, "execute_tool get")) != 0 {
		t.Fatalf("spans:\n%s\nwant the run and its one turn ended, no tool call", dump(spans))
	}
	run := runs[0]
	wantAttr(t, run, tracing.StopReason, "suspended")
	var reason string
	for _, e := range run.Events() {
		if e.Name == "suspended" {
			for _, kv := range e.Attributes {
				if kv.Key == tracing.Reason {
					reason = kv.Value.AsString()
				}
			}
		}
	}
	if reason == "" || !strings.Contains(reason, "fenced") {
		t.Errorf("suspended event reason %q, want the cause (events %+v)", reason, run.Events())
	}
	if run.Status().Code == codes.Error {
		t.Errorf("a suspended run is an error span: %+v", run.Status())
	}
}

// TestRunTraceFollowUps queues two messages behind a running run, each
// sent under a trace of its own: the next run, which takes both, is the
// child of the first one's span and is linked to the second one's.
func TestRunTraceFollowUps(t *testing.T) {
	tracer, rec := newRecorder(t)
	inTool, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	block := tool("block", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		once.Do(func() { close(inTool) })
		<-release
		return agentfleet.TextResult("unblocked"), nil
	})
	m := &script{steps: []step{use(`block {}`), say("first"), say("second")}}
	s, _ := newSession(t, m, loop.Config{Tracer: tracer}, block)
	ctx1, p1 := remoteParent(t, "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true)
	ctx2, p2 := remoteParent(t, "11111111111111111111111111111111", "2222222222222222", true)
	ctx3, p3 := remoteParent(t, "33333333333333333333333333333333", "4444444444444444", true)
	first := s.SendContext(ctx1, agentfleet.NewUserMessage("one"))
	<-inTool
	second := s.SendContext(ctx2, agentfleet.NewUserMessage("two"))
	third := s.SendContext(ctx3, agentfleet.NewUserMessage("three"))
	close(release)
	wait(t, first)
	if wait(t, second) != wait(t, third) {
		t.Fatal("the follow-ups went to different runs")
	}
	runs := named(rec.Ended(), "invoke_agent test")
	if len(runs) != 2 {
		t.Fatalf("spans:\n%s", dump(rec.Ended()))
	}
	if runs[0].Parent().SpanID() != p1.SpanID() || len(runs[0].Links()) != 0 {
		t.Errorf("first run under %s with links %+v, want under %s with none", runs[0].Parent().SpanID(), runs[0].Links(), p1.SpanID())
	}
	next := runs[1]
	if next.Parent().SpanID() != p2.SpanID() || next.SpanContext().TraceID() != p2.TraceID() {
		t.Errorf("second run under %s in trace %s, want under %s in %s", next.Parent().SpanID(), next.SpanContext().TraceID(), p2.SpanID(), p2.TraceID())
	}
	if links := next.Links(); len(links) != 1 || !links[0].SpanContext.Equal(p3) {
		t.Errorf("second run links %+v, want one to %v", links, p3)
	}
}

// TestRunTraceAborted aborts a run in its model call: the call's span ends
// as canceled, and the run's span ends with stop reason aborted, which is
// not an error of the run.
func TestRunTraceAborted(t *testing.T) {
	tracer, rec := newRecorder(t)
	inModel := make(chan struct{})
	m := &script{steps: []step{func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		close(inModel)
		<-ctx.Done()
		return nil, ctx.Err()
	}}}
	s, _ := newSession(t, m, loop.Config{Tracer: tracer, ModelName: "m1"})
	reply := s.Send(agentfleet.NewUserMessage("go"))
	<-inModel
	if !s.Abort("changed my mind") {
		t.Fatal("Abort found no run")
	}
	if final := wait(t, reply); final.StopReason != agentfleet.StopReasonAborted {
		t.Fatalf("stop reason %s, want aborted", final.StopReason)
	}
	spans := rec.Ended()
	chats, runs := named(spans, "chat m1"), named(spans, "invoke_agent test")
	if len(chats) != 1 || len(runs) != 1 || len(named(spans, "turn")) != 1 {
		t.Fatalf("spans:\n%s", dump(spans))
	}
	if chats[0].Status().Code != codes.Error {
		t.Errorf("chat status %+v, want Error", chats[0].Status())
	}
	wantAttr(t, chats[0], tracing.ErrorType, "canceled")
	wantAttr(t, runs[0], tracing.StopReason, "aborted")
	if runs[0].Status().Code == codes.Error {
		t.Errorf("run status %+v: an abort is not a failure of the run", runs[0].Status())
	}
}

// TestRunTraceResumed resumes a run from a history whose user message
// holds the trace context it was sent with: the resumed run's span is the
// child of that context, in the sender's trace, marked resumed, and its
// events carry that trace id. Without a stored context the resumed run
// starts a trace of its own.
func TestRunTraceResumed(t *testing.T) {
	for _, stored := range []bool{true, false} {
		tracer, rec := newRecorder(t)
		_, sc := remoteParent(t, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true)
		history := entries("run-1", agentfleet.NewUserMessage("go"))
		if stored {
			history[0].Trace = sc
		}
		var events []*agentfleet.Event
		var mu sync.Mutex
		sink := agentfleet.EventSinkFunc(func(e *agentfleet.Event) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		})
		s, _ := newSession(t, &script{steps: []step{say("done")}}, loop.Config{Tracer: tracer, History: history, Sink: loop.Events(sink)})
		if final := wait(t, s.Resume("run-1")); final == nil || final.RunID != "run-1" {
			t.Fatalf("final = %+v", final)
		}
		runs := named(rec.Ended(), "invoke_agent test")
		if len(runs) != 1 {
			t.Fatalf("spans:\n%s\nwant one run", dump(rec.Ended()))
		}
		run := runs[0]
		wantAttr(t, run, tracing.RunResumed, "true")
		wantAttr(t, run, tracing.RunID, "run-1")
		inTrace := run.Parent().Equal(sc) && run.SpanContext().TraceID() == sc.TraceID()
		if inTrace != stored {
			t.Errorf("stored context %v: the resumed run's parent is %v (trace %s)", stored, run.Parent(), run.SpanContext().TraceID())
		}
		for _, e := range events {
			if e.TraceID != run.SpanContext().TraceID().String() {
				t.Errorf("%s event has trace_id %q, want the run's %s", e.Type, e.TraceID, run.SpanContext().TraceID())
			}
		}
	}
}
