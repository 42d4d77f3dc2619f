package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestTraceViewWithoutCollector starts the orchestrator with
// OTEL_TRACES_EXPORTER=memory and no collector anywhere: the dashboard
// says it has the trace view, and a run's trace id (from its events)
// answers GET /api/trace with the run's spans, its invoke_agent root and
// the tool call's span under it; --trace-view-spans bounds what is kept.
func TestTraceViewWithoutCollector(t *testing.T) {
	clearOTEL(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "memory")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	m := run(t, "--workers", "1", "--trace-view-spans", "500")
	nc := connect(t, m)
	ends, err := nc.SubscribeSync("agent.events.default.traced.run.end")
	if err != nil {
		t.Fatal(err)
	}
	ask(t, nc, "agent.ask.default.traced", "what is 2*(3+4)?")
	msg, err := ends.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var end agentfleet.Event
	if err := json.Unmarshal(msg.Data, &end); err != nil || len(end.TraceID) != 32 {
		t.Fatalf("run.end %s: %v, no trace id", msg.Data, err)
	}
	base := "http://" + m.HTTPAddr()
	// The root span ends as the run's handler returns, around its run.end:
	// ask until it is kept.
	var reply struct {
		Spans []struct {
			N string `json:"name"`
			S string `json:"span_id"`
			P string `json:"parent_id"`
		}
		Kept struct {
			MaxSpans int `json:"max_spans"`
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for root := false; !root; {
		res, err := http.Get(base + "/api/trace?id=" + end.TraceID)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(res.Body).Decode(&reply)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range reply.Spans {
			root = root || (s.P == "" && strings.HasPrefix(s.N, "invoke_agent"))
		}
		if !root && time.Now().After(deadline) {
			t.Fatalf("no invoke_agent root among the kept spans of trace %s: %+v", end.TraceID, reply.Spans)
		}
		if !root {
			time.Sleep(50 * time.Millisecond) // the span ends in the orchestrator, which tells nothing outside
		}
	}
	tool := false
	ids := map[string]bool{}
	for _, s := range reply.Spans {
		ids[s.S] = true
	}
	for _, s := range reply.Spans {
		tool = tool || (strings.HasPrefix(s.N, "execute_tool") && ids[s.P])
	}
	if !tool {
		t.Errorf("no execute_tool span under another of the trace: %+v", reply.Spans)
	}
	if reply.Kept.MaxSpans != 500 {
		t.Errorf("max_spans = %d, want --trace-view-spans 500", reply.Kept.MaxSpans)
	}
}

// clearOTEL unsets the OTEL_* variables the tracing setup reads, so that
// the environment of the test run does not leak in, and restores the
// global tracer provider the orchestrator sets.
func clearOTEL(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "AGENTFLEET_TRACES_FILE",
	} {
		t.Setenv(k, "")
	}
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
}
