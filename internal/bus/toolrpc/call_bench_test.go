package toolrpc_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkCallWithEvents measures one whole tool call as a session makes
// it, with both sides in this process: the pipeline's prepare, execute and
// finalize, tool.start and tool.end published on a real server, the tool
// client, and a worker serving an echo tool. Its allocations are the
// call's, both sides together.
func BenchmarkCallWithEvents(b *testing.B) {
	benchCallWithEvents(b, context.Background(), nil, nil)
}

// BenchmarkCallWithEventsTraced is BenchmarkCallWithEvents with tracing
// set up on both sides as the OTEL_* variables set it up: an SDK tracer
// provider for each, with a batch span processor and the OTLP/HTTP
// exporter, both sending to a receiver in this process that reads each
// request and throws it away (a collector's decoding is not the call's
// cost). The calls run under one turn's span, started once, so the figures
// are a call's own cost of tracing: its span in the pipeline, the trace
// context in its request, the worker's span, and their export.
//
//   - on: every span is sampled. spans/op counts the spans exported per
//     call, 2 when the batch processors dropped none.
//   - sampled-out: both providers sample parentbased_always_off, so the
//     turn's span does not record: the pipeline starts no span and the
//     request carries no trace context, and the worker's span, a root,
//     does not record either.
//   - sampled-out,worker-always-on: the worker samples as the SDK does by
//     default, parentbased_always_on, so it records a root span of its own
//     for each call of the unsampled turn.
func BenchmarkCallWithEventsTraced(b *testing.B) {
	on, off := sdktrace.ParentBased(sdktrace.AlwaysSample()), sdktrace.ParentBased(sdktrace.NeverSample())
	for _, tc := range []struct {
		name         string
		orch, worker sdktrace.Sampler
	}{
		{"on", on, on},
		{"sampled-out", off, off},
		{"sampled-out,worker-always-on", off, on},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url := startOTLPDiscard(b)
			var exported atomic.Int64
			orch := newBenchProvider(b, url, "bench-orchestrator", tc.orch, &exported)
			work := newBenchProvider(b, url, "bench-worker", tc.worker, &exported)
			ctx, turn := orch.Tracer(tracing.Scope).Start(context.Background(), "turn")
			b.Cleanup(func() { turn.End() })
			if got, want := tracing.Recording(ctx), tc.name == "on"; got != want {
				b.Fatalf("turn span recording = %v, want %v", got, want)
			}
			benchCallWithEvents(b, ctx, work.Tracer(tracing.Scope), func(b *testing.B, run func()) {
				// Whatever a run leaves in the batch processors is
				// exported before the next begins, outside the timer.
				flush := func() {
					for _, tp := range []*sdktrace.TracerProvider{orch, work} {
						if err := tp.ForceFlush(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
				}
				flush()
				spans0 := exported.Load()
				run()
				b.StopTimer()
				flush()
				b.ReportMetric(float64(exported.Load()-spans0)/float64(b.N), "spans/op")
			})
		})
	}
}

// benchCallWithEvents measures calls made under ctx through a worker with
// tracer (nil: the worker does not trace), one after another and 32 at
// once per CPU. around, if set, runs each measurement.
func benchCallWithEvents(b *testing.B, ctx context.Context, tracer trace.Tracer, around func(b *testing.B, run func())) {
	srv := bustest.MustRunNATS(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	text := strings.Repeat("x", 200)
	serveEchoTraced(b, srv, tracer)
	nc := bustest.MustConnect(b, srv)
	c, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	subjects, _ := bus.NewSubjects("")
	sink := &benchEnvelope{next: events.NewPublisher(nc, subjects, quiet)}
	store := tools.NewStore("bench")
	if err := store.Register(&agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "echo", Description: "echo", Parallel: true}}); err != nil {
		b.Fatal(err)
	}
	p := pipeline.New(pipeline.Config{Executor: fleetexec.Executor{Client: c}, Sink: sink, Agent: "bench", Session: "s1", RunID: "r1"})
	pctx := &pipeline.Context{Tools: store}
	args := map[string]any{"text": text}
	var ids atomic.Uint64
	call := func() {
		out := p.Run(ctx, pctx, nil, []agentfleet.ToolCall{{ID: "call_" + strconv.FormatUint(ids.Add(1), 36), Name: "echo", Arguments: args}}).Outcomes[0]
		if out.IsError || agentfleet.JoinText(out.Result.Content) != text {
			b.Fatalf("outcome %+v", out.Result)
		}
	}
	if around == nil {
		around = func(_ *testing.B, run func()) { run() }
	}
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		around(b, func() {
			for b.Loop() {
				call()
			}
		})
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32)
		around(b, func() {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					call()
				}
			})
		})
	})
}

// newBenchProvider returns a tracer provider for service, sampling with
// sampler and exporting in batches over OTLP/HTTP to url, shut down when
// b ends. It adds the spans it exports to exported.
func newBenchProvider(b *testing.B, url, service string, sampler sdktrace.Sampler, exported *atomic.Int64) *sdktrace.TracerProvider {
	b.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(url+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(countingExporter{exp, exported}), sdktrace.WithSampler(sampler),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	b.Cleanup(func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return tp
}

// countingExporter counts the spans its exporter sent.
type countingExporter struct {
	sdktrace.SpanExporter
	spans *atomic.Int64
}

func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		e.spans.Add(int64(len(spans)))
	}
	return err
}

// startOTLPDiscard starts an OTLP/HTTP trace receiver that reads each
// request to its end, throws it away and accepts every span; it returns
// its base URL.
func startOTLPDiscard(b *testing.B) string {
	b.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// An empty ExportTraceServiceResponse.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	return srv.URL
}

// benchEnvelope fills in the envelope of events as a session does.
type benchEnvelope struct {
	seq  atomic.Uint64
	next agentfleet.EventSink
}

func (e *benchEnvelope) Emit(ev *agentfleet.Event) {
	ev.Agent, ev.Session, ev.RunID, ev.Turn = "bench", "s1", "r1", 1
	ev.Seq = e.seq.Add(1)
	ev.Time = time.Now().UTC()
	e.next.Emit(ev)
}
