package dashboard

import (
	"fmt"
	"net/http"

	"github.com/agentfleet/agentfleet/internal/tracing"
)

// Traces is where the built-in trace view reads spans: the last ones the
// orchestrator exported, tracing.Recent.
type Traces interface {
	// Trace returns the kept spans of the trace with id, by start.
	Trace(id string) []tracing.SpanRecord
	// Kept reports how many spans, of how many bytes, are kept, and the
	// bounds.
	Kept() (spans int, bytes int64, maxSpans int, maxBytes int64)
}

// traceReply is the answer of GET /api/trace.
type traceReply struct {
	TraceID string               `json:"trace_id"`
	Spans   []tracing.SpanRecord `json:"spans"`
	Kept    keptSpans            `json:"kept"`
}

type keptSpans struct {
	Spans    int   `json:"spans"`
	Bytes    int64 `json:"bytes"`
	MaxSpans int   `json:"max_spans"`
	MaxBytes int64 `json:"max_bytes"`
}

// isTraceID reports whether s is a W3C trace id: 32 lowercase hex digits,
// not all zero.
func isTraceID(s string) bool {
	if len(s) != 32 {
		return false
	}
	zero := true
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
		zero = zero && c == '0'
	}
	return !zero
}

// serveTrace answers GET /api/trace?id=<trace id> with the kept spans of
// that trace (docs/PROTOCOL.md).
func (h *Handler) serveTrace(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	id := r.URL.Query().Get("id")
	if !isTraceID(id) {
		// At most 40 characters of what came back, quoted.
		httpError(w, http.StatusBadRequest, fmt.Sprintf("trace id %.40q is not a W3C trace id: want 32 lowercase hex digits, not all zero, as ?id=", id))
		return
	}
	if h.cfg.Traces == nil {
		httpError(w, http.StatusNotFound, "this dashboard keeps no traces: the orchestrator keeps the last spans it records for this view when OTEL_TRACES_EXPORTER names memory, console, file or otlp (docs/OPERATIONS.md, Traces)")
		return
	}
	spans := h.cfg.Traces.Trace(id)
	n, b, maxN, maxB := h.cfg.Traces.Kept()
	if len(spans) == 0 {
		httpError(w, http.StatusNotFound, fmt.Sprintf("no span of trace %s is kept here: this orchestrator keeps the last %d spans (%d bytes) it recorded, and a tool worker's spans are not among them; an older trace, or one another orchestrator recorded, is in the tracing backend if one is configured", id, maxN, maxB))
		return
	}
	writeJSON(w, http.StatusOK, traceReply{TraceID: id, Spans: spans, Kept: keptSpans{Spans: n, Bytes: b, MaxSpans: maxN, MaxBytes: maxB}})
}
