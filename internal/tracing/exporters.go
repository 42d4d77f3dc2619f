package tracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The exporters OTEL_TRACES_EXPORTER may name, comma separated.
const (
	exporterOTLP    = "otlp"    // OTLP to a collector or backend
	exporterConsole = "console" // JSON lines on standard output
	exporterFile    = "file"    // JSON lines appended to $AGENTFLEET_TRACES_FILE
	exporterMemory  = "memory"  // only the spans kept for the built-in trace view
	exporterNone    = "none"
)

// EnvTracesFile is the file the file exporter appends to.
const EnvTracesFile = "AGENTFLEET_TRACES_FILE"

// exporterNames reads OTEL_TRACES_EXPORTER: the exporters it names, in
// order, without none and repeats; unset, otlp when an OTLP endpoint is
// set, else nothing.
func exporterNames(getenv func(string) string) ([]string, error) {
	exp := strings.TrimSpace(getenv(EnvTracesExporter))
	if exp == "" {
		if getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != "" {
			return []string{exporterOTLP}, nil
		}
		return nil, nil
	}
	var names []string
	for name := range strings.SplitSeq(exp, ",") {
		switch name = strings.TrimSpace(name); name {
		case exporterOTLP, exporterConsole, exporterFile, exporterMemory:
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		case exporterNone, "":
		default:
			return nil, fmt.Errorf("%s=%q: %q is no exporter agentfleet has; name %s, %s (to standard output), %s (to $%s), %s (the built-in trace view only) or %s",
				EnvTracesExporter, exp, name, exporterOTLP, exporterConsole, exporterFile, EnvTracesFile, exporterMemory, exporterNone)
		}
	}
	return names, nil
}

// newExporter builds the exporter name names; memory has none (nil).
// stdout is where console writes.
func newExporter(ctx context.Context, name string, stdout io.Writer) (sdktrace.SpanExporter, string, error) {
	switch name {
	case exporterOTLP:
		proto := firstSet(os.Getenv(EnvTracesProtocol), os.Getenv(EnvProtocol), defaultProtocolEnv)
		protoVar := EnvProtocol // the variable that chose proto, for the error
		if firstSet(os.Getenv(EnvTracesProtocol)) != "" {
			protoVar = EnvTracesProtocol
		}
		var exp sdktrace.SpanExporter
		var err error
		switch proto {
		case protocolHTTP:
			exp, err = otlptracehttp.New(ctx)
		case protocolGRPC:
			exp, err = otlptracegrpc.New(ctx)
		default:
			return nil, "", fmt.Errorf("%s=%q: agentfleet exports traces over %q or %q", protoVar, proto, protocolHTTP, protocolGRPC)
		}
		if err != nil {
			return nil, "", fmt.Errorf("trace exporter (%s): %w", proto, err)
		}
		return exp, "OTLP " + proto + " to " + firstSet(os.Getenv(EnvTracesEndpoint), os.Getenv(EnvEndpoint), "(the exporter's default endpoint)"), nil
	case exporterConsole:
		exp, err := stdouttrace.New(stdouttrace.WithWriter(stdout))
		return exp, "JSON lines on standard output", err
	case exporterFile:
		path := strings.TrimSpace(os.Getenv(EnvTracesFile))
		if path == "" {
			return nil, "", fmt.Errorf("%s=file: set %s to the file to append the spans to", EnvTracesExporter, EnvTracesFile)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, "", fmt.Errorf("%s=%s: %w", EnvTracesFile, path, err)
		}
		exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
		if err != nil {
			f.Close()
			return nil, "", err
		}
		return closing{exp, f}, "JSON lines appended to " + path, nil
	}
	return nil, "", nil
}

// closing is an exporter that closes its file once shut down.
type closing struct {
	sdktrace.SpanExporter
	f *os.File
}

func (c closing) Shutdown(ctx context.Context) error {
	return errors.Join(c.SpanExporter.Shutdown(ctx), c.f.Close())
}
