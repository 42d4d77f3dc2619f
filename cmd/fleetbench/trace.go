package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The prod-traced method is prod with tracing on, set up as the OTEL_*
// variables set it up in cmd/orchestrator and cmd/toolworker: an SDK tracer
// provider with a batch span processor and the OTLP/HTTP exporter, in this
// process and in a worker process of its own. Both export to traceSink, a
// receiver in this process that reads each request, counts its spans and
// throws it away.

// tracedPrefix is the subject prefix of the traced worker, so that the
// prod-traced calls reach it and no other method's do.
const tracedPrefix = "fleetbench-traced"

// newTracerProvider returns a tracer provider for service that samples
// every trace whose parent is sampled (and every root), and exports in
// batches over OTLP/HTTP to endpoint, the receiver's base URL.
func newTracerProvider(ctx context.Context, endpoint, service string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"))
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter to %s: %w", endpoint, err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service)))), nil
}

// shutdownTracer exports the spans still buffered and stops tp, within a
// few seconds.
func shutdownTracer(tp *sdktrace.TracerProvider) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracer provider shutdown: %w", err)
	}
	return nil
}

// traceSink is an OTLP/HTTP trace receiver on a loopback port that reads
// each export request, counts its spans without decoding them, and throws
// it away.
type traceSink struct {
	URL      string
	srv      *http.Server
	done     chan error
	spans    atomic.Int64
	requests atomic.Int64
	bytes    atomic.Int64
}

func startTraceSink() (*traceSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("trace receiver: %w", err)
	}
	s := &traceSink{URL: "http://" + ln.Addr().String(), done: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		spans, err := countSpans(body)
		if err != nil {
			http.Error(w, "ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.spans.Add(spans)
		s.requests.Add(1)
		s.bytes.Add(int64(len(body)))
		// An empty ExportTraceServiceResponse: every span accepted.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// close stops the receiver, after the requests under way.
func (s *traceSink) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// tracedProd is what the prod-traced method adds to prod's parts: the
// receiver, this process's tracer provider and the turn's span the calls
// run under, and the traced worker.
type tracedProd struct {
	sink   *traceSink
	tp     *sdktrace.TracerProvider
	turn   trace.Span
	worker *child

	finished bool
	err      error
	export   TraceExport
}

// TraceExport says what the prod-traced method exported, from both
// processes, over the whole run (warmup included).
type TraceExport struct {
	// Calls counts the prod-traced calls; Spans, Requests and Bytes the
	// spans, export requests and request bytes the receiver got.
	Calls    int64 `json:"calls"`
	Spans    int64 `json:"spans"`
	Requests int64 `json:"requests"`
	Bytes    int64 `json:"bytes"`
}

// startTracedProd starts the receiver, the tracer provider and its turn's
// span, and a traced worker process of the given concurrency serving on
// tracedPrefix. finish stops them.
func (m *Main) startTracedProd(ctx context.Context, concurrency int) (_ *tracedProd, err error) {
	t := &tracedProd{}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.finish())
		}
	}()
	if t.sink, err = startTraceSink(); err != nil {
		return t, err
	}
	if t.tp, err = newTracerProvider(ctx, t.sink.URL, "fleetbench"); err != nil {
		return t, err
	}
	_, t.turn = t.tp.Tracer(tracing.Scope).Start(context.Background(), "turn")
	t.worker, err = m.startChild(ctx, "worker-traced", cmdWorker, "--name", "dispatch-traced",
		"--concurrency", strconv.Itoa(concurrency), "--prefix", tracedPrefix, "--otlp-endpoint", t.sink.URL)
	return t, err
}

// finish ends the turn's span, exports what the tracer provider holds,
// stops the worker, which exports what it holds, and then the receiver,
// and fills in export. It may be called more than once.
func (t *tracedProd) finish() error {
	if t.finished {
		return t.err
	}
	t.finished = true
	var errs []error
	if t.tp != nil {
		t.turn.End()
		errs = append(errs, shutdownTracer(t.tp))
	}
	if t.worker != nil {
		errs = append(errs, t.worker.stop())
	}
	if t.sink != nil {
		errs = append(errs, t.sink.close())
		t.export = TraceExport{Spans: t.sink.spans.Load(), Requests: t.sink.requests.Load(), Bytes: t.sink.bytes.Load()}
	}
	t.err = errors.Join(errs...)
	return t.err
}

// countSpans counts the spans of an encoded ExportTraceServiceRequest
// without decoding them: the spans (2) of each scope_spans (2) of each
// resource_spans (1).
func countSpans(b []byte) (int64, error) {
	var n int64
	err := eachField(b, 1, func(rs []byte) error {
		return eachField(rs, 2, func(ss []byte) error {
			return eachField(ss, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachField calls f with the value of each length-delimited field num of
// the encoded message b, and skips the other fields.
func eachField(b []byte, num protowire.Number, f func([]byte) error) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return fmt.Errorf("field %d: %w", num, protowire.ParseError(l))
			}
			if err := f(v); err != nil {
				return err
			}
			b = b[l:]
			continue
		}
		if l = protowire.ConsumeFieldValue(n, typ, b); l < 0 {
			return fmt.Errorf("field %d: %w", n, protowire.ParseError(l))
		}
		b = b[l:]
	}
	return nil
}
