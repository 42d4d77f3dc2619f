package loop_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/agentfleet/agentfleet/internal/window"
)

// countingSink counts the events of a benchmark's sessions.
type countingSink struct{ n atomic.Int64 }

func (c *countingSink) Emit(*agentfleet.Event) { c.n.Add(1) }

// toolThenText asks for one call of echo after a user message, and answers
// with text after a tool result.
func toolThenText(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	usage := &agentfleet.Usage{InputTokens: 40, OutputTokens: 8, TotalTokens: 48}
	if _, ok := req.Messages[len(req.Messages)-1].(*agentfleet.UserMessage); ok {
		return &agentfleet.AssistantMessage{Model: "bench", StopReason: agentfleet.StopReasonToolUse, Usage: usage,
			Content: []agentfleet.Content{{Type: agentfleet.ContentToolCall, ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"x":1}`)}}}, nil
	}
	onDelta("done")
	return &agentfleet.AssistantMessage{Model: "bench", StopReason: agentfleet.StopReasonStop, Usage: usage,
		Content: []agentfleet.Content{agentfleet.Text("done")}}, nil
}

// benchSession runs one run per iteration on a fresh session: a model call
// asking for a local tool, the tool, and a model call answering, with every
// event emitted and every message handed to the store.
func benchSession(b *testing.B, cfg loop.Config) {
	store, err := tools.NewAgentStore("bench", tool("echo", true, text("echoed")))
	if err != nil {
		b.Fatal(err)
	}
	sink := &countingSink{}
	var stored atomic.Int64
	cfg.Agent, cfg.Session, cfg.Model, cfg.Tools = "bench", "s", loop.ModelFunc(toolThenText), store
	cfg.Sink = loop.Events(sink)
	cfg.Store = storeFuncs{append: func(string, agentfleet.Message) error { stored.Add(1); return nil }}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := loop.New(cfg)
		if final := <-s.Send(agentfleet.NewUserMessage("hi")); final == nil || final.StopReason != agentfleet.StopReasonStop {
			b.Fatalf("run ended with %+v", final)
		}
	}
	b.StopTimer()
	if stored.Load() == 0 || sink.n.Load() == 0 {
		b.Fatal("nothing stored or emitted")
	}
}

// BenchmarkSessionRun measures one run of two turns with one tool call.
func BenchmarkSessionRun(b *testing.B) { benchSession(b, loop.Config{}) }

// BenchmarkSessionRunWindow is BenchmarkSessionRun with a context window
// set, so that every request is measured and fitted.
func BenchmarkSessionRunWindow(b *testing.B) {
	benchSession(b, loop.Config{Context: window.Policy{Window: 8192}})
}

// BenchmarkSessionRunLongHistory is BenchmarkSessionRun on one session of
// 100 runs before: what an idle session's packed history costs a run that
// decodes it and packs it again.
func BenchmarkSessionRunLongHistory(b *testing.B) {
	store, err := tools.NewAgentStore("bench", tool("echo", true, text("echoed")))
	if err != nil {
		b.Fatal(err)
	}
	cfg := loop.Config{Agent: "bench", Session: "s", Model: loop.ModelFunc(toolThenText), Tools: store}
	s := loop.New(cfg)
	for range 100 {
		<-s.Send(agentfleet.NewUserMessage("hi"))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if final := <-s.Send(agentfleet.NewUserMessage("hi")); final == nil || final.StopReason != agentfleet.StopReasonStop {
			b.Fatalf("run ended with %+v", final)
		}
		if err := s.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionFiveRuns runs five runs, one after another, on a fresh
// session per iteration: the histories an idle session packs (4 to 20
// messages), each run decoding what the one before packed.
func BenchmarkSessionFiveRuns(b *testing.B) {
	store, err := tools.NewAgentStore("bench", tool("echo", true, text("echoed")))
	if err != nil {
		b.Fatal(err)
	}
	cfg := loop.Config{Agent: "bench", Session: "s", Model: loop.ModelFunc(toolThenText), Tools: store}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := loop.New(cfg)
		for range 5 {
			if final := <-s.Send(agentfleet.NewUserMessage("hi")); final == nil || final.StopReason != agentfleet.StopReasonStop {
				b.Fatalf("run ended with %+v", final)
			}
			if err := s.Wait(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
}
