package toolrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spanRecorder is a real SDK tracer provider whose ended spans go to a
// recorder.
type spanRecorder struct {
	*tracetest.SpanRecorder
	tp *sdktrace.TracerProvider
}

func newSpanRecorder(t *testing.T, opts ...sdktrace.TracerProviderOption) *spanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec)}, opts...)...)
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return &spanRecorder{rec, tp}
}

func (r *spanRecorder) tracer() trace.Tracer { return r.tp.Tracer("test") }

// find returns the ended spans named name of kind.
func (r *spanRecorder) find(name string, kind trace.SpanKind) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.Ended() {
		if s.Name() == name && s.SpanKind() == kind {
			out = append(out, s)
		}
	}
	return out
}

func spanAttr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func eventsNamed(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func eventAttr(e sdktrace.Event, key attribute.Key) attribute.Value {
	for _, kv := range e.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// watchRequests subscribes to the requests of tool name, as a second
// subscriber beside the workers' queue group, and delivers their headers.
func watchRequests(t *testing.T, srv *server.Server, name string) <-chan nats.Header {
	t.Helper()
	subjects, _ := bus.NewSubjects("")
	nc := bustest.MustConnect(t, srv)
	ch := make(chan nats.Header, 16)
	if _, err := nc.Subscribe(subjects.Tool(name), func(m *nats.Msg) { ch <- m.Header }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// runTraced runs one call of tool through a pipeline over c, under the
// span of ctx if any (the pipeline's span of the call is its child), and
// returns its outcome.
func runTraced(t *testing.T, ctx context.Context, c *toolrpc.ToolClient, tool *agentfleet.Tool, args string) *pipeline.Outcome {
	t.Helper()
	store := tools.NewStore("t")
	def := *tool
	def.Handler = nil // runs on the fleet
	def.InputSchema = json.RawMessage(`{"type":"object"}`)
	store.MustRegister(&def)
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		t.Fatal(err)
	}
	p := pipeline.New(pipeline.Config{Executor: fleetexec.Executor{Client: c}})
	return p.Run(ctx, &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{{ID: "call-" + tool.Name, Name: tool.Name, Arguments: m}}).Outcomes[0]
}

func newClient(t *testing.T, srv *server.Server, cfg toolrpc.ClientConfig) *toolrpc.ToolClient {
	t.Helper()
	c, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func serve(t *testing.T, srv *server.Server, cfg toolrpc.ServerConfig) *toolrpc.ToolServer {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLog
	}
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	return w
}

// TestCallTraceCrossesNATS runs a traced call through the pipeline and a
// real NATS server to a traced worker: the request carries the call's
// span in a header keyed "traceparent", exactly; the worker's span of the
// call (kind server) is the child of the orchestrator's execute_tool span,
// in its trace, with the queue wait, the execution time, the outcome, the
// attempt and the worker, and the tool runs under it.
func TestCallTraceCrossesNATS(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	orch, work := newSpanRecorder(t), newSpanRecorder(t) // two processes
	inTool := make(chan trace.SpanContext, 1)
	echo := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "echo", Description: "echoes"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			inTool <- trace.SpanContextFromContext(ctx)
			return agentfleet.TextResult("echoed"), nil
		}),
	}
	w := serve(t, srv, toolrpc.ServerConfig{Name: "w1", Tools: []*agentfleet.Tool{echo}, Tracer: work.tracer()})
	requests := watchRequests(t, srv, "echo")
	c := newClient(t, srv, toolrpc.ClientConfig{})

	ctx, turn := orch.tracer().Start(context.Background(), "turn")
	out := runTraced(t, ctx, c, echo, `{"x":1}`)
	turn.End()
	if out.IsError {
		t.Fatalf("call failed: %s", agentfleet.JoinText(out.Result.Content))
	}

	clients := orch.find("execute_tool echo", trace.SpanKindInternal)
	if len(clients) != 1 {
		t.Fatalf("%d client spans of the call, want 1", len(clients))
	}
	client := clients[0]
	if client.Parent().SpanID() != turn.SpanContext().SpanID() {
		t.Errorf("client span parent %s, want the turn %s", client.Parent().SpanID(), turn.SpanContext().SpanID())
	}
	if got := eventsNamed(client, tracing.EventAttempt); len(got) != 1 || eventAttr(got[0], tracing.ToolAttempt).AsInt64() != 1 {
		t.Errorf("attempt events %+v, want one of attempt 1", got)
	}
	if v, _ := spanAttr(client, tracing.Worker); v.AsString() != w.Name() {
		t.Errorf("client span worker %q, want %q", v.AsString(), w.Name())
	}

	h := <-requests
	if got := h["traceparent"]; len(got) != 1 || !strings.Contains(got[0], client.SpanContext().SpanID().String()) {
		t.Errorf(`request header "traceparent" = %q, want the client span %s (headers %v)`, got, client.SpanContext().SpanID(), h)
	}
	for k := range h {
		if k != "traceparent" {
			t.Errorf("request header %q besides traceparent", k)
		}
	}

	// The worker's span ends once the final frame is out, which may be
	// after the client has the result.
	var servers []sdktrace.ReadOnlySpan
	bustest.Eventually(t, "the worker's span to end", func() bool {
		servers = work.find("execute_tool echo", trace.SpanKindServer)
		return len(servers) > 0
	})
	if len(servers) != 1 {
		t.Fatalf("%d server spans, want 1", len(servers))
	}
	s := servers[0]
	if s.Parent().SpanID() != client.SpanContext().SpanID() || s.SpanContext().TraceID() != client.SpanContext().TraceID() || !s.Parent().IsRemote() {
		t.Errorf("server span parent %v trace %s, want the remote client span %s of trace %s",
			s.Parent(), s.SpanContext().TraceID(), client.SpanContext().SpanID(), client.SpanContext().TraceID())
	}
	if got := <-inTool; got.SpanID() != s.SpanContext().SpanID() {
		t.Errorf("the tool ran under span %s, want the worker's span %s", got.SpanID(), s.SpanContext().SpanID())
	}
	for _, key := range []attribute.Key{tracing.QueueWaitMS, tracing.ExecutionMS} {
		if v, ok := spanAttr(s, key); !ok || v.Type() != attribute.FLOAT64 || v.AsFloat64() < 0 {
			t.Errorf("server span %s = %v (present %v), want a duration in ms", key, v.Emit(), ok)
		}
	}
	for key, want := range map[attribute.Key]string{
		tracing.GenAIOperationName: "execute_tool", tracing.GenAIToolName: "echo", tracing.GenAIToolCallID: "call-echo",
		tracing.ToolOutcome: "ok", tracing.ToolAttempt: "1", tracing.Worker: w.Name(),
	} {
		if v, _ := spanAttr(s, key); v.Emit() != want {
			t.Errorf("server span %s = %q, want %q", key, v.Emit(), want)
		}
	}
	if s.EndTime().Before(s.StartTime()) {
		t.Errorf("server span ends %v before it starts %v", s.EndTime(), s.StartTime())
	}
}

// TestCallUntraced: a call whose context has no span sends a request
// without headers, and a traced worker records it as a root span.
func TestCallUntraced(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	work := newSpanRecorder(t)
	echo := &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "echo", Description: "echoes"},
		Handler: agentfleet.HandlerFunc(func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult("echoed"), nil
		})}
	serve(t, srv, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo}, Tracer: work.tracer()})
	requests := watchRequests(t, srv, "echo")
	c := newClient(t, srv, toolrpc.ClientConfig{})
	if out := runTraced(t, context.Background(), c, echo, `{}`); out.IsError {
		t.Fatalf("call failed: %s", agentfleet.JoinText(out.Result.Content))
	}
	if h := <-requests; len(h) != 0 {
		t.Errorf("untraced request has headers %v", h)
	}
	var servers []sdktrace.ReadOnlySpan
	bustest.Eventually(t, "the worker's span to end", func() bool {
		servers = work.find("execute_tool echo", trace.SpanKindServer)
		return len(servers) > 0
	})
	if p := servers[0].Parent(); p.IsValid() {
		t.Errorf("server span of an untraced call has parent %v", p)
	}
}

// TestCallSampledOut: a call under a span that does not record (its trace
// was sampled out) still tells the worker so, and a worker that follows
// its parent's decision records nothing.
func TestCallSampledOut(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	orch := newSpanRecorder(t, sdktrace.WithSampler(sdktrace.NeverSample()))
	work := newSpanRecorder(t, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	ran := make(chan struct{}, 1)
	echo := &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "echo", Description: "echoes"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if trace.SpanFromContext(ctx).IsRecording() {
				return nil, errors.New("the worker records a sampled-out call")
			}
			ran <- struct{}{}
			return agentfleet.TextResult("echoed"), nil
		})}
	serve(t, srv, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo}, Tracer: work.tracer()})
	requests := watchRequests(t, srv, "echo")
	c := newClient(t, srv, toolrpc.ClientConfig{})
	ctx, turn := orch.tracer().Start(context.Background(), "turn")
	out := runTraced(t, ctx, c, echo, `{}`)
	turn.End()
	if out.IsError {
		t.Fatalf("call failed: %s", agentfleet.JoinText(out.Result.Content))
	}
	<-ran
	sc := tracing.Remote(<-requests)
	if !sc.IsValid() || sc.IsSampled() || sc.TraceID() != turn.SpanContext().TraceID() {
		t.Errorf("request trace context %v, want the unsampled one of trace %s", sc, turn.SpanContext().TraceID())
	}
	if got := len(orch.Ended()) + len(work.Ended()); got != 0 {
		t.Errorf("%d spans recorded of a sampled-out call", got)
	}
}

// TestCallTraceBusy keeps a worker of concurrency 1 busy with another
// client's call, and sends a traced call: the worker's refusal is a busy
// event on the call's span, naming the worker, and every request sent is
// an attempt event; the call runs once the worker is free.
func TestCallTraceBusy(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	orch := newSpanRecorder(t)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "hold", Description: "holds the holder's call until released"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if c.ID == "holder" {
				close(started)
				<-release
			}
			return agentfleet.TextResult("done " + c.ID), nil
		}),
	}
	w := serve(t, srv, toolrpc.ServerConfig{Name: "busyw", Tools: []*agentfleet.Tool{hold}, Concurrency: 1,
		Observe: func(_, outcome string, _ time.Duration) {
			if outcome == "busy" {
				once.Do(func() { close(release) }) // refused once: let the holder finish
			}
		}})
	other := newClient(t, srv, toolrpc.ClientConfig{})
	holder := make(chan error, 1)
	go func() {
		p := prepared("hold", map[string]any{})
		p.Call.ID = "holder"
		_, err := fleetexec.Executor{Client: other}.Execute(context.Background(), p, func(any) {})
		holder <- err
	}()
	<-started

	c := newClient(t, srv, toolrpc.ClientConfig{})
	ctx, turn := orch.tracer().Start(context.Background(), "turn")
	out := runTraced(t, ctx, c, hold, `{}`)
	turn.End()
	if out.IsError {
		t.Fatalf("call failed: %s", agentfleet.JoinText(out.Result.Content))
	}
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	spans := orch.find("execute_tool hold", trace.SpanKindInternal)
	if len(spans) != 1 {
		t.Fatalf("%d call spans, want 1", len(spans))
	}
	busy := eventsNamed(spans[0], tracing.EventBusy)
	if len(busy) == 0 {
		t.Fatalf("no busy event; events %+v", spans[0].Events())
	}
	for _, e := range busy {
		if got := eventAttr(e, tracing.Worker).AsString(); got != w.Name() {
			t.Errorf("busy event worker %q, want %q", got, w.Name())
		}
	}
	if a := eventsNamed(spans[0], tracing.EventAttempt); len(a) != len(busy)+1 {
		t.Errorf("%d attempt events for %d refusals and a success, want %d", len(a), len(busy), len(busy)+1)
	}
	if r := eventsNamed(spans[0], tracing.EventRetry); len(r) != 0 {
		t.Errorf("retry events %+v: a busy refusal is not a retry", r)
	}
}

// TestCallTraceLostWorker cuts off the worker running a traced call to an
// idempotent tool once it has acknowledged it: the retry on another worker
// is a retry event naming the lost worker, and the survivor's span is a
// child of the same call span, of attempt 2.
func TestCallTraceLostWorker(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	orch, work := newSpanRecorder(t), newSpanRecorder(t)
	inCall := make(chan struct{})
	blocking := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "lookup", Description: "never returns", Annotations: agentfleet.Annotations{Idempotent: true}},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			close(inCall)
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	}
	victimConn := bustest.MustConnect(t, srv)
	victim, err := toolrpc.Serve(victimConn, toolrpc.ServerConfig{Name: "victim", Tools: []*agentfleet.Tool{blocking}, Heartbeat: 50 * time.Millisecond, Logger: quietLog, Tracer: work.tracer()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Stop() })
	// The client knows the call's worker once its ack came; watch for it
	// on the inboxes.
	acked := make(chan struct{})
	var once sync.Once
	watch := bustest.MustConnect(t, srv)
	if _, err := watch.Subscribe("_INBOX.>", func(m *nats.Msg) {
		if f, err := wire.DecodeFrame(m.Data); err == nil && f.T == wire.FrameAck && f.Worker == victim.Name() {
			once.Do(func() { close(acked) })
		}
	}); err != nil {
		t.Fatal(err)
	}
	watch.Flush()
	c := newClient(t, srv, toolrpc.ClientConfig{RetryBackoff: 10 * time.Millisecond})

	ctx, turn := orch.tracer().Start(context.Background(), "turn")
	done := make(chan *pipeline.Outcome, 1)
	go func() { done <- runTraced(t, ctx, c, blocking, `{"q":"a"}`) }()
	<-inCall
	select {
	case <-acked:
	case <-time.After(10 * time.Second):
		t.Fatal("the victim did not acknowledge the call")
	}
	survivor := serve(t, srv, toolrpc.ServerConfig{Name: "survivor", Tracer: work.tracer(), Tools: []*agentfleet.Tool{{
		ToolDef: blocking.ToolDef,
		Handler: agentfleet.HandlerFunc(func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult("found"), nil
		}),
	}}})
	victimConn.Close() // no more heartbeats: the worker is lost
	out := <-done
	turn.End()
	if out.IsError || agentfleet.JoinText(out.Result.Content) != "found" {
		t.Fatalf("outcome %s %q, want the survivor's result", out.Kind, agentfleet.JoinText(out.Result.Content))
	}

	spans := orch.find("execute_tool lookup", trace.SpanKindInternal)
	if len(spans) != 1 {
		t.Fatalf("%d call spans, want 1", len(spans))
	}
	call := spans[0]
	retries := eventsNamed(call, tracing.EventRetry)
	if len(retries) != 1 {
		t.Fatalf("retry events %+v, want one", call.Events())
	}
	r := retries[0]
	if got := eventAttr(r, tracing.ToolAttempt).AsInt64(); got != 2 {
		t.Errorf("retry event attempt %d, want 2", got)
	}
	if got := eventAttr(r, tracing.Worker).AsString(); got != victim.Name() {
		t.Errorf("retry event worker %q, want the lost %q", got, victim.Name())
	}
	if got := eventAttr(r, tracing.Reason).AsString(); !strings.Contains(got, "sent nothing") {
		t.Errorf("retry event reason %q, want the lost worker's", got)
	}
	if v, _ := spanAttr(call, tracing.ToolAttempts); v.AsInt64() != 2 {
		t.Errorf("call span attempts %v, want 2", v.Emit())
	}
	if v, _ := spanAttr(call, tracing.Worker); v.AsString() != survivor.Name() {
		t.Errorf("call span worker %q, want the survivor %q", v.AsString(), survivor.Name())
	}
	var second sdktrace.ReadOnlySpan
	bustest.Eventually(t, "the survivor's span to end", func() bool {
		for _, s := range work.find("execute_tool lookup", trace.SpanKindServer) {
			if v, _ := spanAttr(s, tracing.Worker); v.AsString() == survivor.Name() {
				second = s
				return true
			}
		}
		return false
	})
	if second.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Errorf("survivor's span parent %s, want the call span %s", second.Parent().SpanID(), call.SpanContext().SpanID())
	}
	if v, _ := spanAttr(second, tracing.ToolAttempt); v.AsInt64() != 2 {
		t.Errorf("survivor's span attempt %v, want 2", v.Emit())
	}
}

// TestCallTraceToolError: a tool that fails makes both spans of the call,
// the orchestrator's and the worker's, error spans with outcome error.
func TestCallTraceToolError(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	orch, work := newSpanRecorder(t), newSpanRecorder(t)
	fail := &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "fail", Description: "fails"},
		Handler: agentfleet.HandlerFunc(func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return nil, errors.New("disk full at /var/data")
		})}
	serve(t, srv, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{fail}, Tracer: work.tracer()})
	c := newClient(t, srv, toolrpc.ClientConfig{})
	ctx, turn := orch.tracer().Start(context.Background(), "turn")
	out := runTraced(t, ctx, c, fail, `{}`)
	turn.End()
	if !out.IsError || !strings.Contains(agentfleet.JoinText(out.Result.Content), "disk full") {
		t.Fatalf("outcome %s %q, want the tool's error", out.Kind, agentfleet.JoinText(out.Result.Content))
	}
	var servers []sdktrace.ReadOnlySpan
	bustest.Eventually(t, "the worker's span to end", func() bool {
		servers = work.find("execute_tool fail", trace.SpanKindServer)
		return len(servers) > 0
	})
	clients := orch.find("execute_tool fail", trace.SpanKindInternal)
	if len(clients) != 1 {
		t.Fatalf("%d client spans", len(clients))
	}
	for _, s := range []sdktrace.ReadOnlySpan{clients[0], servers[0]} {
		if s.Status().Code != codes.Error {
			t.Errorf("%v span status %+v, want Error", s.SpanKind(), s.Status())
		}
		if v, _ := spanAttr(s, tracing.ToolOutcome); v.AsString() != "error" {
			t.Errorf("%v span outcome %q, want error", s.SpanKind(), v.AsString())
		}
	}
}
