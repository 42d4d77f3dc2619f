package pipeline_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// remoteStore holds one tool without a handler, run by the executor.
func remoteStore(name string) *tools.Store {
	store := tools.NewStore("t")
	store.MustRegister(&agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`)}})
	return store
}

// TestStartAfterSend: an executor that says when it sent the call gets
// tool.start published then, not before; the event order is the same.
func TestStartAfterSend(t *testing.T) {
	rec := &recorder{}
	var before, after []string
	exec := pipeline.ExecutorFunc(func(ctx context.Context, prep *pipeline.Prepared, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
		before = rec.types()
		prep.Sent()
		prep.Sent() // a second attempt's send publishes nothing more
		after = rec.types()
		progress("half")
		return agentfleet.TextResult("done"), nil
	})
	p := pipeline.New(pipeline.Config{Executor: exec, Sink: rec})
	b := p.Run(context.Background(), &pipeline.Context{Tools: remoteStore("remote")}, nil, []agentfleet.ToolCall{call("a", "remote", `{}`)})
	if o := b.Outcomes[0]; o.IsError {
		t.Fatalf("outcome: %+v", o.Result)
	}
	if len(before) != 0 {
		t.Errorf("events before the send: %v, want none", before)
	}
	if want := []string{"tool.start:a"}; !slices.Equal(after, want) {
		t.Errorf("events after the send: %v, want %v", after, want)
	}
	if got, want := rec.types(), []string{"tool.start:a", "tool.update:a", "tool.end:a"}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

// TestStartWithoutSent: an executor that never calls Sent, one that sends
// progress first, and one that fails: tool.start still comes first, once.
func TestStartWithoutSent(t *testing.T) {
	for name, tc := range map[string]struct {
		exec pipeline.ExecutorFunc
		want []string
	}{
		"silent": {
			exec: func(ctx context.Context, prep *pipeline.Prepared, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
				return agentfleet.TextResult("done"), nil
			},
			want: []string{"tool.start:a", "tool.end:a"},
		},
		"progress first": {
			exec: func(ctx context.Context, prep *pipeline.Prepared, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
				progress(1)
				prep.Sent()
				progress(2)
				return agentfleet.TextResult("done"), nil
			},
			want: []string{"tool.start:a", "tool.update:a", "tool.update:a", "tool.end:a"},
		},
		"panic": {
			exec: func(ctx context.Context, prep *pipeline.Prepared, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
				panic("boom")
			},
			want: []string{"tool.start:a", "tool.end:a"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			p := pipeline.New(pipeline.Config{Executor: tc.exec, Sink: rec})
			p.Run(context.Background(), &pipeline.Context{Tools: remoteStore("remote")}, nil, []agentfleet.ToolCall{call("a", "remote", `{}`)})
			if got := rec.types(); !slices.Equal(got, tc.want) {
				t.Errorf("events = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStartBeforeHook: with a before-tool-call hook, which may take its
// time, tool.start is out before the hook runs; a call that fails to
// prepare still gets its tool.start before its tool.end.
func TestStartBeforeHook(t *testing.T) {
	rec := &recorder{}
	var during []string
	p := pipeline.New(pipeline.Config{
		Sink: rec,
		Before: func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
			during = rec.types()
			return &pipeline.BeforeResult{Block: true, Reason: "no"}, nil
		},
	})
	store := tools.NewStore("t")
	store.MustRegister(textTool("echo", false, echoHandler))
	p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("a", "echo", `{}`)})
	if want := []string{"tool.start:a"}; !slices.Equal(during, want) {
		t.Errorf("events while the hook ran: %v, want %v", during, want)
	}

	rec = &recorder{}
	p = pipeline.New(pipeline.Config{Sink: rec})
	p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("b", "missing", `{}`)})
	if got, want := rec.types(), []string{"tool.start:b", "tool.end:b"}; !slices.Equal(got, want) {
		t.Errorf("events of an unknown tool = %v, want %v", got, want)
	}
}

// TestParallelBatchOfOneSendsFirst: a parallel batch of one call runs as a
// sequential one, with tool.start after the send.
func TestParallelBatchOfOneSendsFirst(t *testing.T) {
	rec := &recorder{}
	var before []string
	exec := pipeline.ExecutorFunc(func(ctx context.Context, prep *pipeline.Prepared, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
		before = rec.types()
		prep.Sent()
		return agentfleet.TextResult("done"), nil
	})
	store := tools.NewStore("t")
	store.MustRegister(&agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "remote", Description: "r", InputSchema: json.RawMessage(`{"type":"object"}`), Parallel: true}})
	p := pipeline.New(pipeline.Config{Mode: pipeline.Parallel, Executor: exec, Sink: rec})
	b := p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("a", "remote", `{}`)})
	if !b.Parallel {
		t.Errorf("batch not reported parallel")
	}
	if len(before) != 0 {
		t.Errorf("events before the send: %v, want none", before)
	}
	if got, want := rec.types(), []string{"tool.start:a", "tool.end:a"}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}
