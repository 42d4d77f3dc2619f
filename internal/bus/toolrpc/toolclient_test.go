package toolrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

func prepared(name string, args map[string]any) *pipeline.Prepared {
	return &pipeline.Prepared{
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name}},
		Call: agentfleet.ToolCall{ID: "c-" + name, Name: name, Arguments: args}, Args: args, Timeout: 10 * time.Second,
	}
}

// TestOversizedResultIsAnErrorResult serves a tool whose result cannot fit
// the server's max payload: the call ends with an error result saying so,
// instead of a dropped message and a timeout.
func TestOversizedResultIsAnErrorResult(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	big := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "big", Description: "returns too much"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult(strings.Repeat("x", 2<<20)), nil
		}),
	}
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{big}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = fleetexec.Executor{Client: c}.Execute(context.Background(), prepared("big", map[string]any{}), func(any) {})
	if err == nil || !strings.Contains(err.Error(), "exceeds the NATS max payload") || !strings.Contains(err.Error(), "code 413") {
		t.Errorf("err = %v, want a 413 naming the max payload", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}

	// Arguments too large to send fail before sending.
	_, err = fleetexec.Executor{Client: c}.Execute(context.Background(), prepared("big", map[string]any{"blob": strings.Repeat("y", 2<<20)}), func(any) {})
	if err == nil || !strings.Contains(err.Error(), "arguments of") {
		t.Errorf("oversized arguments: err = %v", err)
	}
}

// TestStartWhileTheWorkerRuns: through the real client, a call's tool.start
// is published once its request is on its way, while the worker still runs
// it; a call that could not be sent still has tool.start before tool.end.
func TestStartWhileTheWorkerRuns(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	started := make(chan struct{}, 1)
	hold := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "hold", Description: "returns once its tool.start is out"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			select {
			case <-started:
				return agentfleet.TextResult("started"), nil
			case <-time.After(5 * time.Second): // the failure's bound, not a wait
				return nil, errors.New("no tool.start while the call ran")
			}
		}),
	}
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{hold}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var events []string
	sink := agentfleet.EventSinkFunc(func(e *agentfleet.Event) {
		mu.Lock()
		events = append(events, string(e.Type))
		mu.Unlock()
		if e.Type == agentfleet.EventToolStart {
			started <- struct{}{}
		}
	})
	store := tools.NewStore("t")
	store.MustRegister(&agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "hold", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	p := pipeline.New(pipeline.Config{Executor: fleetexec.Executor{Client: c}, Sink: sink})
	out := p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{{ID: "a", Name: "hold", Arguments: map[string]any{}}}).Outcomes[0]
	if out.IsError || agentfleet.JoinText(out.Result.Content) != "started" {
		t.Fatalf("outcome: %s", agentfleet.JoinText(out.Result.Content))
	}
	mu.Lock()
	if got, want := strings.Join(events, ","), "tool.start,tool.end"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	events = nil
	mu.Unlock()

	out = p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{{ID: "b", Name: "hold", Arguments: map[string]any{"blob": strings.Repeat("y", 2<<20)}}}).Outcomes[0]
	if !out.IsError || !strings.Contains(agentfleet.JoinText(out.Result.Content), "arguments of") {
		t.Errorf("oversized arguments: %s", agentfleet.JoinText(out.Result.Content))
	}
	mu.Lock()
	defer mu.Unlock()
	if got, want := strings.Join(events, ","), "tool.start,tool.end"; got != want {
		t.Errorf("events of a call never sent = %s, want %s", got, want)
	}
}
