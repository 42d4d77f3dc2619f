package tracing

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// The bounds of what Recent keeps of one span: longer values are cut,
// further attributes and events dropped (and counted).
const (
	maxValueBytes     = 1024
	maxSpanAttributes = 64
	maxSpanEvents     = 32
	// spanOverhead is what a kept span costs besides its strings.
	spanOverhead = 256
)

// SpanRecord is what Recent keeps of one span, for a trace view: plain
// strings, as the JSON of the dashboard's trace API.
type SpanRecord struct {
	TraceID  string `json:"trace_id"`
	SpanID   string `json:"span_id"`
	ParentID string `json:"parent_id,omitempty"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Service  string `json:"service,omitempty"`
	// Start and End are the span's; DurationMS is End - Start.
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	DurationMS float64   `json:"duration_ms"`
	// Status is "error" for a span that failed, "ok" when set ok, else "".
	Status        string        `json:"status,omitempty"`
	StatusMessage string        `json:"status_message,omitempty"`
	Attributes    []KeyValue    `json:"attributes,omitempty"`
	Events        []EventRecord `json:"events,omitempty"`
	// Dropped counts the attributes and events left out past the bounds.
	Dropped int `json:"dropped,omitempty"`
}

// KeyValue is an attribute, its value as text (cut at 1 KiB).
type KeyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// EventRecord is a span event.
type EventRecord struct {
	Name       string     `json:"name"`
	Time       time.Time  `json:"time"`
	Attributes []KeyValue `json:"attributes,omitempty"`
}

// RecentConfig bounds the spans a Recent keeps.
type RecentConfig struct {
	// Spans is how many spans are kept, the oldest dropped first;
	// 0 keeps none (no Recent).
	Spans int
	// Bytes bounds the bytes of the kept spans (their strings and a
	// fixed cost each). Optional; default 8 MiB.
	Bytes int64
}

// Recent is a span exporter that keeps the last spans exported, bounded
// in count and in bytes, for a trace view without a collector. It is safe
// for concurrent use.
type Recent struct {
	cfg RecentConfig

	mu    sync.Mutex
	ring  []SpanRecord // a circular buffer of at most cfg.Spans
	sizes []int64
	head  int // the oldest
	n     int
	bytes int64
}

var _ sdktrace.SpanExporter = (*Recent)(nil)

// NewRecent returns a Recent with cfg's bounds, or nil when cfg.Spans is 0.
func NewRecent(cfg RecentConfig) *Recent {
	if cfg.Spans <= 0 {
		return nil
	}
	if cfg.Bytes <= 0 {
		cfg.Bytes = 8 << 20
	}
	return &Recent{cfg: cfg, ring: make([]SpanRecord, cfg.Spans), sizes: make([]int64, cfg.Spans)}
}

// ExportSpans keeps spans, dropping the oldest past the bounds. It never
// fails.
func (r *Recent) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	for _, s := range spans {
		r.add(record(s))
	}
	return nil
}

// Shutdown keeps the spans kept; it does nothing.
func (r *Recent) Shutdown(context.Context) error { return nil }

func (r *Recent) add(rec SpanRecord, size int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if size > r.cfg.Bytes {
		return // one span larger than the whole bound: not kept
	}
	for r.n > 0 && (r.n == len(r.ring) || r.bytes+size > r.cfg.Bytes) {
		r.bytes -= r.sizes[r.head]
		r.ring[r.head] = SpanRecord{}
		r.head = (r.head + 1) % len(r.ring)
		r.n--
	}
	i := (r.head + r.n) % len(r.ring)
	r.ring[i], r.sizes[i] = rec, size
	r.n++
	r.bytes += size
}

// Trace returns the kept spans of the trace with id (32 hex digits), by
// start time, or none.
func (r *Recent) Trace(id string) []SpanRecord {
	r.mu.Lock()
	var out []SpanRecord
	for k := range r.n {
		if s := &r.ring[(r.head+k)%len(r.ring)]; s.TraceID == id {
			out = append(out, *s)
		}
	}
	r.mu.Unlock()
	slices.SortStableFunc(out, func(a, b SpanRecord) int { return a.Start.Compare(b.Start) })
	return out
}

// Kept reports how many spans, of how many bytes, are kept, and the bounds.
func (r *Recent) Kept() (spans int, bytes int64, maxSpans int, maxBytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.bytes, r.cfg.Spans, r.cfg.Bytes
}

// record converts s and returns it with its size.
func record(s sdktrace.ReadOnlySpan) (SpanRecord, int64) {
	sc := s.SpanContext()
	rec := SpanRecord{
		TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), Name: cut(s.Name()), Kind: s.SpanKind().String(),
		Start: s.StartTime(), End: s.EndTime(), DurationMS: float64(s.EndTime().Sub(s.StartTime()).Microseconds()) / 1000,
	}
	if p := s.Parent(); p.IsValid() {
		rec.ParentID = p.SpanID().String()
	}
	if res := s.Resource(); res != nil {
		if v, ok := res.Set().Value(semconv.ServiceNameKey); ok {
			rec.Service = cut(v.Emit())
		}
	}
	switch st := s.Status(); st.Code {
	case codes.Error:
		rec.Status, rec.StatusMessage = "error", cut(st.Description)
	case codes.Ok:
		rec.Status = "ok"
	}
	attrs := s.Attributes()
	for i, kv := range attrs {
		if i == maxSpanAttributes {
			rec.Dropped += len(attrs) - i
			break
		}
		rec.Attributes = append(rec.Attributes, KeyValue{Key: cut(string(kv.Key)), Value: cut(kv.Value.Emit())})
	}
	evs := s.Events()
	for i, e := range evs {
		if i == maxSpanEvents {
			rec.Dropped += len(evs) - i
			break
		}
		er := EventRecord{Name: cut(e.Name), Time: e.Time}
		for j, kv := range e.Attributes {
			if j == maxSpanAttributes {
				rec.Dropped += len(e.Attributes) - j
				break
			}
			er.Attributes = append(er.Attributes, KeyValue{Key: cut(string(kv.Key)), Value: cut(kv.Value.Emit())})
		}
		rec.Events = append(rec.Events, er)
	}
	return rec, size(&rec)
}

func size(r *SpanRecord) int64 {
	n := int64(spanOverhead + len(r.TraceID) + len(r.SpanID) + len(r.ParentID) + len(r.Name) + len(r.Kind) + len(r.Service) + len(r.Status) + len(r.StatusMessage))
	for _, kv := range r.Attributes {
		n += int64(32 + len(kv.Key) + len(kv.Value))
	}
	for _, e := range r.Events {
		n += int64(64 + len(e.Name))
		for _, kv := range e.Attributes {
			n += int64(32 + len(kv.Key) + len(kv.Value))
		}
	}
	return n
}

// cut bounds a value at maxValueBytes, on a rune boundary.
func cut(s string) string {
	if len(s) <= maxValueBytes {
		return s
	}
	i := maxValueBytes
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
