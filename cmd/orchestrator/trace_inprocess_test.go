package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/tracing/tracingtest"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestTracesExported runs the program with OTEL_EXPORTER_OTLP_ENDPOINT set
// to a real OTLP/HTTP receiver and asks under a client's traceparent: Close
// exports the run's trace, under the client's span, with the model call
// (whose context went to the model server) and the tool call on the
// in-process worker, as service agentfleet-orchestrator.
func TestTracesExported(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"} {
		t.Setenv(k, "")
	}
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	rcv := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	model := llmtest.NewServer(t)
	t.Setenv("OPENAI_BASE_URL", model.BaseURL())
	t.Setenv("OPENAI_API_KEY", "test-key")
	model.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_a", Name: "echo", Arguments: `{"text":"traced"}`}).Response(),
		llmtest.TextReply("done").Response(),
	)

	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--http", "", "--workers", "1", "--model", "test-model"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			m.Close()
		}
	})
	nc, err := nats.Connect(m.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	reply, err := nc.RequestMsg(&nats.Msg{Subject: "agent.ask.default.traced", Data: []byte("echo this"),
		Header: nats.Header{"traceparent": {"00-" + clientTrace + "-" + clientSpan + "-01"}}}, 20*time.Second)
	nc.Close()
	if err != nil {
		t.Fatal(err)
	}
	var final agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &final); err != nil || agentfleet.JoinText(final.Content) != "done" {
		t.Fatalf("answer %s (%v)", reply.Data, err)
	}
	closed = true
	if err := m.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	spans := rcv.WaitFor(t, 5*time.Second, func(s []tracingtest.Span) bool {
		return len(byName(s, "invoke_agent default")) == 1 && len(byName(s, "execute_tool echo")) == 2
	})
	run := byName(spans, "invoke_agent default")[0]
	if run.TraceID != clientTrace || run.ParentSpanID != clientSpan || run.Service != "agentfleet-orchestrator" {
		t.Errorf("run span trace %s parent %s service %q, want %s under %s of agentfleet-orchestrator", run.TraceID, run.ParentSpanID, run.Service, clientTrace, clientSpan)
	}
	for _, s := range spans {
		if s.TraceID != clientTrace {
			t.Errorf("span %s in trace %s, want %s", s.Name, s.TraceID, clientTrace)
		}
	}
	chats := byName(spans, "chat test-model")
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2:\n%s", len(chats), tracingtest.Dump(spans))
	}
	reqs := model.Requests()
	for i, r := range reqs {
		if tp := r.Header.Get("traceparent"); !strings.Contains(tp, chats[0].SpanID) && !strings.Contains(tp, chats[1].SpanID) {
			t.Errorf("model request %d traceparent %q names no chat span", i+1, tp)
		}
	}
	calls := byName(spans, "execute_tool echo")
	if calls[0].ParentSpanID != calls[1].SpanID && calls[1].ParentSpanID != calls[0].SpanID {
		t.Errorf("the worker's span is not the child of the call's:\n%s", tracingtest.Dump(calls))
	}
}

func byName(spans []tracingtest.Span, name string) []tracingtest.Span {
	var out []tracingtest.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}
