package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// benchPipeline returns a pipeline in mode, whose events go to a sink that
// drops them, and a context holding an echo tool run in-process, with the
// JSON Schema of a real tool.
func benchPipeline(b *testing.B, mode pipeline.Mode) (*pipeline.Pipeline, *pipeline.Context) {
	b.Helper()
	store := tools.NewStore("bench")
	err := store.Register(&agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name: "echo", Description: "echo", Parallel: true,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			text, _ := c.Arguments["text"].(string)
			return agentfleet.TextResult(text), nil
		}),
	})
	if err != nil {
		b.Fatal(err)
	}
	drop := agentfleet.EventSinkFunc(func(*agentfleet.Event) {})
	return pipeline.New(pipeline.Config{Mode: mode, Sink: drop, Agent: "bench", Session: "s1", RunID: "r1"}),
		&pipeline.Context{Tools: store}
}

func benchCalls(n int) []agentfleet.ToolCall {
	args := map[string]any{"text": strings.Repeat("x", 200)}
	calls := make([]agentfleet.ToolCall, n)
	for i := range calls {
		calls[i] = agentfleet.ToolCall{ID: "call_" + string(rune('a'+i)), Name: "echo", Arguments: args}
	}
	return calls
}

// BenchmarkRunLocal measures prepare (schema validation), execute
// in-process and finalize of one call, with its tool.start and tool.end
// events, as the loop runs a batch of one.
func BenchmarkRunLocal(b *testing.B) {
	p, pctx := benchPipeline(b, pipeline.Sequential)
	calls := benchCalls(1)
	assistant := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if batch := p.Run(ctx, pctx, assistant, calls); batch.Outcomes[0].IsError {
			b.Fatal(agentfleet.JoinText(batch.Outcomes[0].Result.Content))
		}
	}
}

// BenchmarkRunLocalBatch4Parallel measures a batch of four calls run in
// parallel mode.
func BenchmarkRunLocalBatch4Parallel(b *testing.B) {
	p, pctx := benchPipeline(b, pipeline.Parallel)
	calls := benchCalls(4)
	assistant := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		batch := p.Run(ctx, pctx, assistant, calls)
		if !batch.Parallel || batch.Outcomes[3].IsError {
			b.Fatalf("batch = %+v", batch)
		}
	}
}

// BenchmarkPrepare isolates the prepare phase: tool lookup and JSON Schema
// validation of the arguments.
func BenchmarkPrepare(b *testing.B) {
	p, pctx := benchPipeline(b, pipeline.Sequential)
	call := benchCalls(1)[0]
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, out := p.Prepare(ctx, pctx, nil, call); out != nil {
			b.Fatal(agentfleet.JoinText(out.Result.Content))
		}
	}
}
