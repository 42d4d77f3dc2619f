package tracing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/agentfleet/agentfleet/internal/tracing/tracingtest"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    bool
		wantErr string // names the variable
	}{
		{name: "unset", env: nil, want: false},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, want: true},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, want: true},
		{name: "exporter none with endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, want: false},
		{name: "exporter otlp without endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{name: "exporter list", env: map[string]string{"OTEL_TRACES_EXPORTER": "none, otlp"}, want: true},
		{name: "sdk disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, want: false},
		{name: "sdk not disabled", env: map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, want: true},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, want: true},
		{name: "file", env: map[string]string{"OTEL_TRACES_EXPORTER": "file"}, want: true},
		{name: "memory", env: map[string]string{"OTEL_TRACES_EXPORTER": "none,memory"}, want: true},
		{name: "console and otlp", env: map[string]string{"OTEL_TRACES_EXPORTER": "console,otlp"}, want: true},
		{name: "none with an empty name", env: map[string]string{"OTEL_TRACES_EXPORTER": "none,"}, want: false},
		{name: "bad exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: "OTEL_TRACES_EXPORTER"},
		{name: "bad disabled", env: map[string]string{"OTEL_SDK_DISABLED": "yes please", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, wantErr: "OTEL_SDK_DISABLED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tracing.Enabled(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Enabled = %v, %v; want an error naming %s", got, err, tc.wantErr)
				}
				if got {
					t.Error("Enabled is true with an error")
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Enabled = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// clearEnv unsets the variables FromEnv and the SDK read, so that the
// environment of the test run does not leak in.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_INSECURE",
	} {
		t.Setenv(k, "")
	}
	// FromEnv sets the global provider; do not leave it to other tests.
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
}

func TestFromEnvOff(t *testing.T) {
	clearEnv(t)
	p, err := tracing.FromEnv(context.Background(), tracing.Defaults{Service: "svc"}, nil)
	if p != nil || err != nil {
		t.Errorf("FromEnv without OTEL_* = %v, %v; want nil, nil", p, err)
	}
	p.Close(time.Second) // a nil Provider closes
}

func TestFromEnvBadProtocol(t *testing.T) {
	for _, key := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Run(key, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
			t.Setenv(key, "http/json")
			p, err := tracing.FromEnv(context.Background(), tracing.Defaults{Service: "svc"}, nil)
			if err == nil {
				p.Close(time.Second)
				t.Fatal("FromEnv accepted protocol http/json")
			}
			for _, want := range []string{key + `="http/json"`, "http/protobuf", "grpc"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to say %s", err, want)
				}
			}
		})
	}
}

func TestFromEnvBadContentFlag(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "sometimes")
	if p, err := tracing.FromEnv(context.Background(), tracing.Defaults{Service: "svc"}, nil); err == nil || !strings.Contains(err.Error(), "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") {
		p.Close(time.Second)
		t.Errorf("err = %v, want one naming the variable", err)
	}
}

// TestFromEnvExports configures the provider from the environment to a
// real OTLP/HTTP receiver: a span ended before Close arrives, with the
// service name of the defaults, or of OTEL_SERVICE_NAME when set.
func TestFromEnvExports(t *testing.T) {
	for _, tc := range []struct {
		name, envService, wantService string
		content                       string
		wantContent                   bool
	}{
		{name: "defaults", wantService: "agentfleet-test"},
		{name: "OTEL_SERVICE_NAME", envService: "from-env", wantService: "from-env", content: "true", wantContent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			rcv := tracingtest.NewReceiver(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
			t.Setenv("OTEL_SERVICE_NAME", tc.envService)
			t.Setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", tc.content)
			p, err := tracing.FromEnv(context.Background(), tracing.Defaults{Service: "agentfleet-test", Version: "1.2.3", InstanceID: "w1"}, nil)
			if err != nil || p == nil {
				t.Fatalf("FromEnv = %v, %v", p, err)
			}
			if p.Content != tc.wantContent {
				t.Errorf("Content = %v, want %v", p.Content, tc.wantContent)
			}
			if otel.GetTracerProvider() != p.TracerProvider() {
				t.Error("FromEnv did not make its provider the global one")
			}
			_, span := p.Tracer().Start(context.Background(), "probe")
			traceID := span.SpanContext().TraceID().String()
			span.End()
			p.Close(5 * time.Second)
			spans := rcv.WaitFor(t, 5*time.Second, func(s []tracingtest.Span) bool { return len(s) > 0 })
			if len(spans) != 1 {
				t.Fatalf("received %d spans, want 1:\n%s", len(spans), tracingtest.Dump(spans))
			}
			s := spans[0]
			if s.Name != "probe" || s.TraceID != traceID || s.Service != tc.wantService {
				t.Errorf("received %s trace %s service %q; want probe trace %s service %q", s.Name, s.TraceID, s.Service, traceID, tc.wantService)
			}
		})
	}
}
