package agentfleet_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

// benchToolEnd is a tool.end event as the pipeline emits it for a call that
// returned about 200 bytes of text.
var benchToolEnd = &agentfleet.Event{
	Type: agentfleet.EventToolEnd, Agent: "bench", Session: "s000001", RunID: "3f1c2f9e-8a4b-4c1d-9e2f-6b7a8c9d0e1f",
	Turn: 1, Seq: 7, Time: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
	ToolCallID: "call_1x2y3z", ToolName: "bench_echo",
	Result:     agentfleet.TextResult(strings.Repeat("x", 200)),
	DurationMS: 0.412, Worker: "benchworker/NW7ELMVQ6P4D3GZ5V2RH1K", Attempt: 1,
}

// BenchmarkEventMarshal measures json.Marshal of a tool.end event, as the
// publisher encodes every event.
func BenchmarkEventMarshal(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(benchToolEnd); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventMarshalJSON calls the event's MarshalJSON directly: the
// difference to BenchmarkEventMarshal is what json.Marshal adds around a
// Marshaler (validating and compacting its output into a new buffer).
func BenchmarkEventMarshalJSON(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := benchToolEnd.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventMarshalToolStart measures a tool.start event, whose
// arguments are a map that encoding/json sorts by key.
func BenchmarkEventMarshalToolStart(b *testing.B) {
	e := *benchToolEnd
	e.Type, e.Result, e.DurationMS, e.Worker, e.Attempt = agentfleet.EventToolStart, nil, 0, "", 0
	e.Arguments = map[string]any{"text": strings.Repeat("x", 200)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(&e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventEncode compares MarshalJSON ("old") with AppendJSON into a
// reused buffer, as the publisher calls it ("new"), and into a nil buffer
// ("new_nil"), for the events of a tool call and the end of a run.
func BenchmarkEventEncode(b *testing.B) {
	start := *benchToolEnd
	start.Type, start.Result, start.DurationMS, start.Worker, start.Attempt = agentfleet.EventToolStart, nil, 0, "", 0
	start.Arguments = map[string]any{"text": strings.Repeat("x", 200)}
	at := time.Date(2025, 1, 2, 3, 4, 6, 7, time.UTC)
	runEnd := &agentfleet.Event{
		Type: agentfleet.EventRunEnd, Agent: "bench", Session: "s000001", RunID: benchToolEnd.RunID,
		Turn: 2, Seq: 12, Time: at, StopReason: agentfleet.StopReasonStop,
		Message: &agentfleet.AssistantMessage{
			Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text(strings.Repeat("y", 200))},
			API: "openai-completions", Provider: "openai", Model: "gpt-4o-mini",
			Usage:      &agentfleet.Usage{InputTokens: 812, OutputTokens: 64, TotalTokens: 876},
			StopReason: agentfleet.StopReasonStop, RunID: benchToolEnd.RunID, Timestamp: at,
		},
	}
	for _, bc := range []struct {
		name string
		e    *agentfleet.Event
	}{{"tool.start", &start}, {"tool.end", benchToolEnd}, {"run.end", runEnd}} {
		b.Run(bc.name+"/old", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.e.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/new", func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 1024)
			for b.Loop() {
				var err error
				if buf, err = bc.e.AppendJSON(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/new_nil", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.e.AppendJSON(nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
