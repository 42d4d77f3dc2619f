package tracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Defaults describe the process to the tracing backend; the environment
// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) overrides them.
type Defaults struct {
	Service    string // service.name
	Version    string // service.version; optional
	InstanceID string // service.instance.id; optional
	// Recent, when Spans is set, keeps the last spans exported in
	// memory, for Provider.Recent (the built-in trace view).
	Recent RecentConfig
	// Stdout is where the console exporter writes; default os.Stdout.
	Stdout io.Writer
}

// Provider is a tracer provider that exports the spans it records, in
// batches, with the exporters OTEL_TRACES_EXPORTER names (OTLP by
// default), and keeps the last ones in memory when asked.
type Provider struct {
	tp     *sdktrace.TracerProvider
	recent *Recent
	// Content says whether spans carry tool arguments and results
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true); they may
	// hold personal data, so they are left out by default.
	Content bool

	log *slog.Logger
}

// TracerProvider returns the provider for instrumented code.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Recent returns the spans kept in memory, or nil when none are
// (Defaults.Recent). A nil Provider has none.
func (p *Provider) Recent() *Recent {
	if p == nil {
		return nil
	}
	return p.recent
}

// Tracer returns agentfleet's tracer.
func (p *Provider) Tracer() trace.Tracer { return p.tp.Tracer(Scope) }

// Shutdown exports the spans still buffered and stops the exporter; ctx
// bounds how long it may take.
func (p *Provider) Shutdown(ctx context.Context) error { return p.tp.Shutdown(ctx) }

// The environment variables FromEnv reads itself. The exporters read the
// other OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout,
// compression, certificates), the SDK OTEL_TRACES_SAMPLER,
// OTEL_TRACES_SAMPLER_ARG and OTEL_BSP_*, and the resource
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
const (
	EnvSDKDisabled     = "OTEL_SDK_DISABLED"
	EnvTracesExporter  = "OTEL_TRACES_EXPORTER"
	EnvEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvCaptureContent  = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
	protocolHTTP       = "http/protobuf"
	protocolGRPC       = "grpc"
	defaultProtocolEnv = protocolHTTP
)

// Enabled reports whether getenv asks for traces: OTEL_TRACES_EXPORTER
// names otlp, console, file or memory, or, when it is not set, an OTLP
// endpoint is; and OTEL_SDK_DISABLED is not true.
func Enabled(getenv func(string) string) (bool, error) {
	if v, err := envBool(getenv, EnvSDKDisabled); err != nil || v {
		return false, err
	}
	names, err := exporterNames(getenv)
	return len(names) > 0 && err == nil, err
}

// FromEnv returns a provider configured by the OTEL_* environment
// variables, or nil when they do not ask for traces (see Enabled). It also
// makes the provider and Propagator the global ones, and reports export
// errors to log.
func FromEnv(ctx context.Context, d Defaults, log *slog.Logger) (*Provider, error) {
	on, err := Enabled(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	content, err := envBool(os.Getenv, EnvCaptureContent)
	if err != nil {
		return nil, err
	}
	names, err := exporterNames(os.Getenv)
	if err != nil {
		return nil, err
	}
	stdout := d.Stdout
	if stdout == nil {
		stdout = os.Stdout
	}
	recent := NewRecent(d.Recent)
	if recent == nil && slices.Contains(names, exporterMemory) {
		// Only the orchestrator keeps spans for a trace view: memory
		// alone, in the environment of a tool worker too, records none
		// there rather than failing its start.
		names = slices.DeleteFunc(names, func(n string) bool { return n == exporterMemory })
		if len(names) == 0 {
			if log != nil {
				log.Info("not recording traces: " + EnvTracesExporter + "=" + exporterMemory + " keeps spans for the orchestrator's trace view, and this program has none")
			}
			return nil, nil
		}
	}
	var (
		opts  []sdktrace.TracerProviderOption
		built []sdktrace.SpanExporter
		shown []string
	)
	// fail stops the exporters built before an error (one may hold a file).
	fail := func(err error) (*Provider, error) {
		for _, exp := range built {
			_ = exp.Shutdown(context.Background())
		}
		return nil, err
	}
	for _, name := range names {
		exp, what, err := newExporter(ctx, name, stdout)
		if err != nil {
			return fail(err)
		}
		if exp != nil {
			built = append(built, exp)
			opts = append(opts, sdktrace.WithBatcher(exp))
			shown = append(shown, what)
		}
	}
	if recent != nil {
		// Synchronous, so that the trace view shows a span as soon as it
		// ends; keeping one is a conversion and a lock.
		opts = append(opts, sdktrace.WithSyncer(recent))
		shown = append(shown, fmt.Sprintf("the last %d spans kept for the trace view", d.Recent.Spans))
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(d.Service)}
	if d.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(d.Version))
	}
	if d.InstanceID != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(d.InstanceID))
	}
	// Later detectors win: the environment overrides the defaults.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return fail(fmt.Errorf("trace resource: %w", err))
	}
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithResource(res))...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
	if log != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	}
	if log != nil {
		log.Info("recording traces", "exporters", strings.Join(shown, "; "), "content", content)
	}
	return &Provider{tp: tp, recent: recent, Content: content, log: log}, nil
}

// Close exports the spans still buffered, within timeout, and stops the
// exporter; a failure is logged, since it must not fail the process's
// stop. A nil Provider does nothing.
func (p *Provider) Close(timeout time.Duration) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.tp.Shutdown(ctx); err != nil && p.log != nil {
		p.log.Warn("tracing: the last spans may not have been exported", "err", err)
	}
}

func envBool(getenv func(string) string, key string) (bool, error) {
	v := strings.TrimSpace(getenv(key))
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", key, v)
	}
	return b, nil
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
