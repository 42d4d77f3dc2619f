package orchestrator_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceFromClientToWorker sends input with a client's trace context
// (its header key written "Traceparent", as a client may) and follows it:
// the run's span is the child of the client's span, the tool call's span
// is under the run's turn, and the worker's span is the child of the call's;
// the events of the run carry the trace id. Through core NATS, and through
// the durable input stream, where an ask is relayed and an in is stored as
// sent.
func TestTraceFromClientToWorker(t *testing.T) {
	const (
		clientTrace = "5b8efff798038103d269b633813fc60c"
		clientSpan  = "eee19b7ec3c1b174"
	)
	for _, tc := range []struct {
		name    string
		durable bool
		kind    string
	}{
		{"core ask", false, bus.KindAsk},
		{"relayed ask", true, bus.KindAsk},
		{"durable in", true, bus.KindIn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			defer tp.Shutdown(context.Background())
			tracer := tp.Tracer("test")
			model := newScript().on("s1", use(`echo {"text":"hi"}`), sayResults())
			f := startFleet(t, orchestrator.Config{Model: model, Durable: tc.durable, Tracer: tracer},
				toolrpc.ServerConfig{Name: "w", Tools: []*agentfleet.Tool{echo("echo")}, Tracer: tracer})
			bustest.Eventually(t, "the agent to see echo", func() bool {
				_, ok := find(f.orch, "default", "echo")
				return ok
			})
			msg := &nats.Msg{
				Subject: "agent." + tc.kind + ".default.s1",
				Header:  nats.Header{"Traceparent": {"00-" + clientTrace + "-" + clientSpan + "-01"}},
				Data:    []byte(`{"content":"echo hi","id":"m1"}`),
			}
			var runID string
			if tc.kind == bus.KindAsk {
				m, err := f.nc.RequestMsg(msg, 15*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				var a agentfleet.AssistantMessage
				if err := json.Unmarshal(m.Data, &a); err != nil {
					t.Fatal(err)
				}
				if got := agentfleet.JoinText(a.Content); got != `echo=echo{"text":"hi"}` {
					t.Fatalf("answer %q", got)
				}
				runID = a.RunID
			} else {
				if err := f.nc.PublishMsg(msg); err != nil {
					t.Fatal(err)
				}
			}
			end := f.events.wait(t, "run.end", isType(agentfleet.EventRunEnd))
			if runID == "" {
				runID = end.RunID
			}

			// The worker's span ends once its final frame is out.
			var all []sdktrace.ReadOnlySpan
			bustest.Eventually(t, "the run's and the worker's spans", func() bool {
				all = rec.Ended()
				return len(spansOf(all, "invoke_agent default", trace.SpanKindInternal)) == 1 && len(spansOf(all, "execute_tool echo", trace.SpanKindServer)) == 1
			})
			run := spansOf(all, "invoke_agent default", trace.SpanKindInternal)[0]
			if run.SpanContext().TraceID().String() != clientTrace || run.Parent().SpanID().String() != clientSpan {
				t.Errorf("run span in trace %s under %s, want trace %s under the client's span %s",
					run.SpanContext().TraceID(), run.Parent().SpanID(), clientTrace, clientSpan)
			}
			if got := attrOf(run, tracing.RunID); got != runID {
				t.Errorf("run span of run %q, want %q", got, runID)
			}
			calls := spansOf(all, "execute_tool echo", trace.SpanKindInternal)
			if len(calls) != 1 {
				t.Fatalf("%d client spans of the call", len(calls))
			}
			call := calls[0]
			var turn sdktrace.ReadOnlySpan
			for _, s := range spansOf(all, "turn", trace.SpanKindInternal) {
				if s.SpanContext().SpanID() == call.Parent().SpanID() {
					turn = s
				}
			}
			if turn == nil || turn.Parent().SpanID() != run.SpanContext().SpanID() {
				t.Errorf("the call's span is not under a turn of the run")
			}
			worker := spansOf(all, "execute_tool echo", trace.SpanKindServer)[0]
			if worker.Parent().SpanID() != call.SpanContext().SpanID() || worker.SpanContext().TraceID().String() != clientTrace {
				t.Errorf("worker span under %s of trace %s, want the call's span %s of trace %s",
					worker.Parent().SpanID(), worker.SpanContext().TraceID(), call.SpanContext().SpanID(), clientTrace)
			}
			evs := f.events.list(func(e agentfleet.Event) bool { return e.RunID == runID })
			if len(evs) == 0 {
				t.Fatalf("no events of run %s", runID)
			}
			for _, e := range evs {
				if e.TraceID != clientTrace {
					t.Errorf("event %s of the run has trace_id %q, want %s", e.Type, e.TraceID, clientTrace)
				}
			}
		})
	}
}

func spansOf(spans []sdktrace.ReadOnlySpan, name string, kind trace.SpanKind) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name && s.SpanKind() == kind {
			out = append(out, s)
		}
	}
	return out
}

func attrOf(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
