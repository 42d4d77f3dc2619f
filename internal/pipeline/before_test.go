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

// TestBeforeHookEdits replaces a call's arguments from the before hook:
// arguments that fit the schema run; others fail as invalid, naming the
// edit, and the tool never runs.
func TestBeforeHookEdits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   map[string]any
		want   string
		kind   pipeline.Kind
		failed bool
	}{
		{"valid", map[string]any{"city": "Oslo"}, `{"city":"Oslo"}`, pipeline.OK, false},
		{"invalid", map[string]any{"town": "Oslo"}, "Tool weather: edited arguments: ", pipeline.Invalid, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := tools.NewStore("t")
			ran := false
			store.MustRegister(&agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "weather", Description: "w", InputSchema: json.RawMessage(weatherSchema)},
				Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
					ran = true
					return echoHandler(ctx, c)
				})})
			p := pipeline.New(pipeline.Config{Before: func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
				if in.Tool == nil || in.Tool.Name != "weather" || in.Sink == nil {
					t.Errorf("before context: tool %v, sink %v", in.Tool, in.Sink)
				}
				return &pipeline.BeforeResult{Args: tc.edit}, nil
			}})
			b := p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("1", "weather", `{"city":"Bergen"}`)})
			o := b.Outcomes[0]
			if got := agentfleet.JoinText(o.Result.Content); !strings.HasPrefix(got, tc.want) || o.Kind != tc.kind || o.IsError != tc.failed {
				t.Errorf("outcome = %s %v %q, want %s %q", o.Kind, o.IsError, got, tc.kind, tc.want)
			}
			if ran == tc.failed {
				t.Errorf("the tool ran: %v", ran)
			}
		})
	}
}

// TestParallelBeforeHookWaitsAlone holds one call of a parallel batch in
// its before hook (as a call waiting for approval is): the other call runs
// and ends meanwhile, with MaxParallel 1, so the waiting call holds no slot.
func TestParallelBeforeHookWaitsAlone(t *testing.T) {
	store := tools.NewStore("t")
	store.MustRegister(textTool("held", true, echoHandler), textTool("free", true, echoHandler))
	release := make(chan struct{})
	rec := &recorder{}
	var p *pipeline.Pipeline
	p = pipeline.New(pipeline.Config{Mode: pipeline.Parallel, MaxParallel: 1, Sink: agentfleet.EventSinkFunc(func(e *agentfleet.Event) {
		rec.Emit(e)
		if e.Type == agentfleet.EventToolEnd && e.ToolCallID == "f" {
			close(release) // the free call ended while the held one waits
		}
	}), Before: func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
		if in.Call.Name == "held" {
			<-release
		}
		return nil, nil
	}})
	b := p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("h", "held", `{}`), call("f", "free", `{}`)})
	if b.Outcomes[0].IsError || b.Outcomes[1].IsError {
		t.Fatalf("outcomes = %+v, %+v", b.Outcomes[0], b.Outcomes[1])
	}
	if got, want := strings.Join(rec.types(), " "), "tool.start:h tool.start:f tool.end:f tool.end:h"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
}
