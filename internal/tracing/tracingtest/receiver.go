// Package tracingtest is an OTLP/HTTP trace receiver for tests: it decodes
// the export requests that real exporters send with the OTLP protobuf
// types, and keeps the spans for assertions.
package tracingtest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, with the service.name of its resource.
type Span struct {
	Service      string
	TraceID      string // hex
	SpanID       string // hex
	ParentSpanID string // hex; empty for a root
	Name         string
	Kind         tracepb.Span_SpanKind
	Start, End   time.Time
	Attrs        map[string]any
	Events       []Event
	Links        []string // the span ids linked to, hex
	LinkTraces   []string // their trace ids
	StatusCode   tracepb.Status_StatusCode
	StatusMsg    string
}

// Event is a span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs map[string]any
}

// Receiver is an OTLP/HTTP endpoint on 127.0.0.1.
type Receiver struct {
	// URL is the endpoint for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter
	// adds /v1/traces).
	URL string

	srv *httptest.Server

	mu       sync.Mutex
	spans    []Span
	requests int
	changed  chan struct{}
}

// NewReceiver starts a receiver, closed when t ends.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = httptest.NewServer(mux)
	r.URL = r.srv.URL
	t.Cleanup(r.srv.Close)
	return r
}

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = http.MaxBytesReader(w, req.Body, 64<<20)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, fmt.Sprintf("content type %q, want application/x-protobuf", ct), http.StatusUnsupportedMediaType)
		return
	}
	var ex coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &ex); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range ex.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, convert(service, s))
			}
		}
	}
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)

	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.requests++
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func convert(service string, s *tracepb.Span) Span {
	sp := Span{
		Service: service, TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
		Name: s.GetName(), Kind: s.GetKind(),
		Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
		Attrs:      attrs(s.GetAttributes()),
		StatusCode: s.GetStatus().GetCode(), StatusMsg: s.GetStatus().GetMessage(),
	}
	if len(s.GetParentSpanId()) > 0 {
		sp.ParentSpanID = hex.EncodeToString(s.GetParentSpanId())
	}
	for _, e := range s.GetEvents() {
		sp.Events = append(sp.Events, Event{Name: e.GetName(), Time: time.Unix(0, int64(e.GetTimeUnixNano())), Attrs: attrs(e.GetAttributes())})
	}
	for _, l := range s.GetLinks() {
		sp.Links = append(sp.Links, hex.EncodeToString(l.GetSpanId()))
		sp.LinkTraces = append(sp.LinkTraces, hex.EncodeToString(l.GetTraceId()))
	}
	return sp
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Requests returns how many export requests came.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// WaitFor waits until ok holds for the spans received, or fails t after
// timeout; it returns the spans.
func (r *Receiver) WaitFor(t testing.TB, timeout time.Duration, ok func([]Span) bool) []Span {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		spans, changed := slices.Clone(r.spans), r.changed
		r.mu.Unlock()
		if ok(spans) {
			return spans
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("after %v, the %d spans received do not hold what the test waits for:\n%s", timeout, len(spans), Dump(spans))
			return nil
		}
	}
}

// Dump lists spans, one per line, for failure messages.
func Dump(spans []Span) string {
	out := ""
	for _, s := range spans {
		out += fmt.Sprintf("%s %s span=%s parent=%s trace=%s %v events=%d\n", s.Service, s.Name, s.SpanID, s.ParentSpanID, s.TraceID, s.Attrs, len(s.Events))
	}
	return out
}

// Tree indexes spans by their parent.
type Tree map[string][]*Span

// NewTree indexes spans by parent span id.
func NewTree(spans []Span) Tree {
	t := Tree{}
	for i := range spans {
		s := &spans[i]
		t[s.ParentSpanID] = append(t[s.ParentSpanID], s)
	}
	for _, c := range t {
		slices.SortFunc(c, func(a, b *Span) int { return a.Start.Compare(b.Start) })
	}
	return t
}

// Children returns the children of the span parent named name, in the
// order they started.
func (t Tree) Children(parent, name string) []*Span {
	var out []*Span
	for _, s := range t[parent] {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// ByAttr returns the child of parent whose attribute key is value, or nil.
func (t Tree) ByAttr(parent, key string, value any) *Span {
	for _, s := range t[parent] {
		if s.Attrs[key] == value {
			return s
		}
	}
	return nil
}
