package llm

import (
	"context"
	"net/http"
	"sync"

	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// transport is the http.RoundTripper under go-openai: it adds the
// configured headers and the trace context of the model call's span (W3C
// traceparent), and, for the attempt that its request belongs to,
// records the response's status and headers. go-openai turns an error
// response into an *openai.APIError that keeps the status but drops the
// headers, and Retry-After lives in the headers.
type transport struct {
	base    http.RoundTripper
	headers map[string]string
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	traced := trace.SpanContextFromContext(req.Context()).IsValid()
	if len(t.headers) > 0 || traced {
		// A RoundTripper must not modify the request it was given.
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
		if traced {
			tracing.Propagator.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
		}
	}
	resp, err := t.base.RoundTrip(req)
	if rec, ok := req.Context().Value(responseKey{}).(*responseRecord); ok && resp != nil {
		rec.set(resp.StatusCode, resp.Header)
	}
	return resp, err
}

// responseKey is the context key of an attempt's *responseRecord.
type responseKey struct{}

// responseRecord holds the status and headers of the last response of one
// attempt.
type responseRecord struct {
	mu     sync.Mutex
	status int
	header http.Header
}

func (r *responseRecord) set(status int, header http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.header = status, header
}

// get returns the recorded status (0 when no response came) and headers.
func (r *responseRecord) get() (int, http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.header
}

// withResponseRecord returns a context whose requests record their
// responses in a new record.
func withResponseRecord(ctx context.Context) (context.Context, *responseRecord) {
	rec := new(responseRecord)
	return context.WithValue(ctx, responseKey{}, rec), rec
}
