// Package tracing holds what agentfleet needs of OpenTelemetry: the span
// names and attributes it writes (the GenAI semantic conventions and its
// own), the propagation of trace context in message headers (NATS headers,
// as plain maps), and a tracer provider configured by the standard OTEL_*
// environment variables.
//
// Tracing is off unless the environment asks for it (FromEnv). When it is
// off nothing is started: the code on the hot path checks Recording first,
// which is one context lookup.
package tracing

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Propagator writes and reads the W3C trace context (traceparent,
// tracestate) and baggage. It is used whatever the global propagator is, so
// that trace context crosses NATS in every process alike.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// HeaderCarrier adapts message headers to the propagator. It is a plain map
// of keys to values, the underlying type of nats.Header, so a NATS message's
// headers convert to it without this package importing the NATS client.
// Keys are case-sensitive, unlike HTTP's: Set writes a key exactly as given
// (the W3C names are lower case, "traceparent"), and Get finds a key written
// in any case, since a client may have written "Traceparent".
type HeaderCarrier map[string][]string

// Get returns the first value of key, matched exactly, else without regard
// to case.
func (c HeaderCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set sets key to value, replacing any value it had in any case.
func (c HeaderCarrier) Set(key, value string) {
	for k := range c {
		if k != key && strings.EqualFold(k, key) {
			delete(c, k)
		}
	}
	c[key] = []string{value}
}

// Keys lists the keys of the headers.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Inject writes the trace context of ctx into h, creating h if it is nil,
// and returns it. Without a valid span in ctx it returns h unchanged.
func Inject(ctx context.Context, h map[string][]string) map[string][]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return h
	}
	if h == nil {
		h = map[string][]string{}
	}
	Propagator.Inject(ctx, HeaderCarrier(h))
	return h
}

// Extract returns ctx with the remote trace context (and baggage) found in
// h, if any.
func Extract(ctx context.Context, h map[string][]string) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return Propagator.Extract(ctx, HeaderCarrier(h))
}

// Remote returns the remote span context that h carries; it is not valid
// when h carries none, or a malformed one.
func Remote(h map[string][]string) trace.SpanContext {
	if len(h) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(Extract(context.Background(), h))
}

// Recording reports whether ctx holds a span that records: only then do the
// parts of a run start spans of their own.
func Recording(ctx context.Context) bool {
	return trace.SpanFromContext(ctx).IsRecording()
}

// Child starts a span under the recording span of ctx, with that span's
// tracer provider. It must only be called when Recording(ctx) holds.
func Child(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(Scope).Start(ctx, name, opts...)
}

// Scope is the instrumentation scope of agentfleet's spans.
const Scope = "github.com/agentfleet/agentfleet"
