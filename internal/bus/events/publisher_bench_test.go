package events_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busevents "github.com/agentfleet/agentfleet/internal/bus/events"
)

// benchEvents are the events of one tool call, and the end of a run with its
// final message, as the pipeline and the loop emit them.
func benchEvents() map[string]*agentfleet.Event {
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	env := agentfleet.Event{Agent: "bench", Session: "s000001", RunID: "3f1c2f9e-8a4b-4c1d-9e2f-6b7a8c9d0e1f", Turn: 1, Seq: 7, Time: at}
	start, end, runEnd := env, env, env
	start.Type, start.ToolCallID, start.ToolName = agentfleet.EventToolStart, "call_1x2y3z", "bench_echo"
	start.Arguments = map[string]any{"text": strings.Repeat("x", 200)}
	end.Type, end.ToolCallID, end.ToolName = agentfleet.EventToolEnd, "call_1x2y3z", "bench_echo"
	end.Result = agentfleet.TextResult(strings.Repeat("x", 200))
	end.DurationMS, end.Worker, end.Attempt, end.Outcome = 0.412, "benchworker/NW7ELMVQ6P4D3GZ5V2RH1K", 1, "ok"
	runEnd.Type, runEnd.StopReason = agentfleet.EventRunEnd, agentfleet.StopReasonStop
	runEnd.Message = &agentfleet.AssistantMessage{
		Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text(strings.Repeat("y", 200))},
		API: "openai-completions", Provider: "openai", Model: "gpt-4o-mini",
		Usage:      &agentfleet.Usage{InputTokens: 812, OutputTokens: 64, TotalTokens: 876},
		StopReason: agentfleet.StopReasonStop, RunID: env.RunID, Timestamp: at,
	}
	return map[string]*agentfleet.Event{"tool.start": &start, "tool.end": &end, "run.end": &runEnd}
}

// BenchmarkPublisherEmit measures Emit of one event to a real NATS server in
// this process: encoding, subject and publish.
func BenchmarkPublisherEmit(b *testing.B) {
	srv := bustest.MustRunNATS(b)
	subjects, err := bus.NewSubjects("agent")
	if err != nil {
		b.Fatal(err)
	}
	nc := bustest.MustConnect(b, srv)
	p := busevents.NewPublisher(nc, subjects, slog.New(slog.NewTextHandler(io.Discard, nil)))
	events := benchEvents()
	for _, name := range []string{"tool.start", "tool.end", "run.end"} {
		e := events[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Emit(e)
			}
			if err := nc.Flush(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
