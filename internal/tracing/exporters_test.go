package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/tracing"
)

// TestFromEnvConsoleAndFile records a span with OTEL_TRACES_EXPORTER
// console, file, or both with memory, and finds it where each exporter
// writes: JSON on the standard output given, JSON lines appended to
// AGENTFLEET_TRACES_FILE, and in the spans kept in memory (only when the
// program keeps them).
func TestFromEnvConsoleAndFile(t *testing.T) {
	for _, tc := range []struct {
		name, exporters     string
		console, file, kept bool
	}{
		{name: "console", exporters: "console", console: true},
		{name: "file", exporters: "file", file: true},
		{name: "all", exporters: "console, file,memory", console: true, file: true, kept: true},
		{name: "memory", exporters: "memory", kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			path := filepath.Join(t.TempDir(), "spans.jsonl")
			if err := os.WriteFile(path, []byte("an earlier line\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("OTEL_TRACES_EXPORTER", tc.exporters)
			t.Setenv(tracing.EnvTracesFile, path)
			var stdout bytes.Buffer
			keep := 0
			if tc.kept {
				keep = 100
			}
			p, err := tracing.FromEnv(context.Background(), tracing.Defaults{Service: "agentfleet-test", Stdout: &stdout,
				Recent: tracing.RecentConfig{Spans: keep}}, nil)
			if err != nil || p == nil {
				t.Fatalf("FromEnv = %v, %v", p, err)
			}
			_, span := p.Tracer().Start(context.Background(), "probe")
			traceID := span.SpanContext().TraceID().String()
			span.End()
			p.Close(5 * time.Second)
			check := func(where string, out []byte, want bool) {
				t.Helper()
				var got struct {
					Name        string
					SpanContext struct{ TraceID string }
				}
				found := false
				for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
					if json.Unmarshal([]byte(line), &got) == nil && got.Name == "probe" && got.SpanContext.TraceID == traceID {
						found = true
					}
				}
				if found != want {
					t.Errorf("%s holds the span: %v, want %v:\n%s", where, found, want, out)
				}
			}
			check("standard output", stdout.Bytes(), tc.console)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), "an earlier line\n") {
				t.Errorf("the file was not appended to: %q", b)
			}
			check("the file", b, tc.file)
			if rec := p.Recent(); !tc.kept && rec != nil {
				t.Error("spans are kept in memory without Defaults.Recent")
			} else if tc.kept && (rec == nil || len(rec.Trace(traceID)) != 1) {
				t.Error("the span is not kept in memory")
			}
		})
	}
}

// TestFromEnvExporterErrors: a file exporter without its file or with
// one it cannot open, and an exporter agentfleet has not, each fail,
// naming what to set.
func TestFromEnvExporterErrors(t *testing.T) {
	for _, tc := range []struct {
		name, exporters, file string
		keep                  int
		want                  []string
	}{
		{name: "file without its variable", exporters: "file", want: []string{"AGENTFLEET_TRACES_FILE"}},
		{name: "file in no folder", exporters: "file", file: filepath.Join(t.TempDir(), "nosuch", "spans.jsonl"), want: []string{"AGENTFLEET_TRACES_FILE=", "nosuch"}},
		{name: "zipkin", exporters: "otlp,zipkin", keep: 10, want: []string{`"zipkin"`, "console", "file", "memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("OTEL_TRACES_EXPORTER", tc.exporters)
			t.Setenv(tracing.EnvTracesFile, tc.file)
			p, err := tracing.FromEnv(context.Background(), tracing.Defaults{Service: "svc", Recent: tracing.RecentConfig{Spans: tc.keep}}, nil)
			if err == nil {
				p.Close(time.Second)
				t.Fatal("FromEnv did not fail")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %s", err, w)
				}
			}
		})
	}
}

// TestFromEnvMemoryWithoutKeeping: memory alone, in a program that keeps
// no spans (a tool worker), records nothing and does not fail.
func TestFromEnvMemoryWithoutKeeping(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "memory")
	if p, err := tracing.FromEnv(context.Background(), tracing.Defaults{Service: "svc"}, nil); p != nil || err != nil {
		p.Close(time.Second)
		t.Errorf("FromEnv = %v, %v; want nil, nil", p, err)
	}
}
