package tracing_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

const (
	traceHex  = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanHex   = "00f067aa0ba902b7"
	sampledTP = "00-" + traceHex + "-" + spanHex + "-01"
)

func remoteContext(t *testing.T, flags trace.TraceFlags) context.Context {
	t.Helper()
	tid, err := trace.TraceIDFromHex(traceHex)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex(spanHex)
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return trace.ContextWithRemoteSpanContext(context.Background(), sc)
}

// TestInjectWritesLowerCaseKeys: nats.Header keys are case-sensitive, and
// W3C names its header in lower case; a key of another case written
// earlier is replaced, not kept beside it.
func TestInjectWritesLowerCaseKeys(t *testing.T) {
	h := nats.Header{"Traceparent": {"00-stale"}, "Other": {"kept"}}
	h = tracing.Inject(remoteContext(t, trace.FlagsSampled), h)
	if got := h["traceparent"]; len(got) != 1 || got[0] != sampledTP {
		t.Errorf(`h["traceparent"] = %q, want [%q]`, got, sampledTP)
	}
	for k := range h {
		if k != "traceparent" && k != "Other" {
			t.Errorf("header %q written besides traceparent (headers %v)", k, h)
		}
	}
	if got := h["Other"]; len(got) != 1 || got[0] != "kept" {
		t.Errorf("Other = %q, want it untouched", got)
	}

	if got := tracing.Inject(context.Background(), nil); got != nil {
		t.Errorf("Inject without a span = %v, want nil headers", got)
	}
	if got := tracing.Inject(remoteContext(t, trace.FlagsSampled), nil); got["traceparent"] == nil {
		t.Errorf("Inject into nil headers = %v, want new headers with traceparent", got)
	}
}

// TestExtractAnyCase reads the trace context whatever the case a client
// wrote its key in, and rejects malformed ones.
func TestExtractAnyCase(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     nats.Header
		valid bool
	}{
		{"lower", nats.Header{"traceparent": {sampledTP}}, true},
		{"canonical", nats.Header{"Traceparent": {sampledTP}}, true},
		{"upper", nats.Header{"TRACEPARENT": {sampledTP}}, true},
		{"none", nil, false},
		{"empty value", nats.Header{"traceparent": {""}}, false},
		{"malformed", nats.Header{"traceparent": {"00-nothex-" + spanHex + "-01"}}, false},
		{"short", nats.Header{"traceparent": {"00-" + traceHex + "-01"}}, false},
		{"zero trace id", nats.Header{"traceparent": {"00-00000000000000000000000000000000-" + spanHex + "-01"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := tracing.Remote(tc.h)
			if sc.IsValid() != tc.valid {
				t.Fatalf("Remote(%v) valid = %v, want %v", tc.h, sc.IsValid(), tc.valid)
			}
			if !tc.valid {
				return
			}
			if got := sc.TraceID().String(); got != traceHex {
				t.Errorf("trace id = %s, want %s", got, traceHex)
			}
			if got := sc.SpanID().String(); got != spanHex {
				t.Errorf("span id = %s, want %s", got, spanHex)
			}
			if !sc.IsRemote() || !sc.IsSampled() {
				t.Errorf("remote %v sampled %v, want both", sc.IsRemote(), sc.IsSampled())
			}
			ctx := tracing.Extract(context.Background(), tc.h)
			if got := trace.SpanContextFromContext(ctx); !got.Equal(sc) {
				t.Errorf("Extract = %v, want %v", got, sc)
			}
		})
	}
}

// TestCarrierGet prefers the exact key and falls back to any case.
func TestCarrierGet(t *testing.T) {
	c := tracing.HeaderCarrier{"traceparent": {"exact"}, "TRACEPARENT": {"upper"}, "Tracestate": {"a=1"}}
	if got := c.Get("traceparent"); got != "exact" {
		t.Errorf(`Get("traceparent") = %q, want the exact key's value`, got)
	}
	if got := c.Get("tracestate"); got != "a=1" {
		t.Errorf(`Get("tracestate") = %q, want the value of Tracestate`, got)
	}
	if got := c.Get("baggage"); got != "" {
		t.Errorf(`Get("baggage") = %q, want ""`, got)
	}
}

// TestInjectUnsampled carries the flags: a sampled-out trace stays
// sampled out downstream.
func TestInjectUnsampled(t *testing.T) {
	h := tracing.Inject(remoteContext(t, 0), nil)
	sc := tracing.Remote(h)
	if !sc.IsValid() || sc.IsSampled() {
		t.Errorf("round trip of an unsampled context: valid %v sampled %v (headers %v)", sc.IsValid(), sc.IsSampled(), h)
	}
}
