package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// TestProgressFloodBoundedInEventStream is the attack of a worker's tool
// that floods its call's progress to evict the event stream's retention:
// 300 updates of 100 kB (30 MB) against an event stream of 256 MiB, whose
// 128th, 2 MiB, bounds one call's tool.update events. The events published
// add up to at most that, one tool.update says how many were dropped, the
// call ends with its result, and the next call is served.
func TestProgressFloodBoundedInEventStream(t *testing.T) {
	const (
		updates = 300
		limit   = 2 << 20
	)
	chunk := strings.Repeat("p", 100_000)
	flood := tool("flood", true, func(_ context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		for i := range updates {
			c.Progress(map[string]any{"i": i, "chunk": chunk})
		}
		return agentfleet.TextResult("flooded"), nil
	})
	// The flood's frames crowd out the worker's heartbeats: under two CPU
	// hogs, three missed beats gave the worker up for lost on every
	// attempt. Losing a worker is not what this test is about, so the
	// client tolerates 30 (30 s at the default beat).
	f := startFleet(t, orchestrator.Config{Model: newScript(), Durable: true, DurableConfig: input.DurableConfig{EventsMaxBytes: 256 << 20},
		Tools: toolrpc.ClientConfig{HeartbeatMisses: 30}},
		toolrpc.ServerConfig{Tools: []*agentfleet.Tool{flood, echo("say")}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o, err := f.orch.CallTool(ctx, "default", "flood", agentfleet.ToolCall{ID: "call_flood", Name: "flood", Arguments: map[string]any{}}, nil)
	if err != nil || o.IsError || agentfleet.JoinText(o.Result.Content) != "flooded" {
		t.Fatalf("flood = %+v, %v; want its result", o, err)
	}
	end := f.events.wait(t, "the flood's tool.end", func(e agentfleet.Event) bool {
		return e.ToolCallID == "call_flood" && e.Type == agentfleet.EventToolEnd
	})
	// A loaded machine may give the worker up for lost behind its own
	// flood and run the call again: each attempt floods anew, and the
	// bound holds over them all.
	sent := updates * max(end.Attempt, 1)
	var (
		out, bytes int
		notice     map[string]any
	)
	for _, e := range f.events.list(func(e agentfleet.Event) bool {
		return e.ToolCallID == "call_flood" && e.Type == agentfleet.EventToolUpdate
	}) {
		m, _ := e.Partial.(map[string]any)
		if d, ok := m[pipeline.ProgressDroppedKey].(map[string]any); ok {
			notice = d
			continue
		}
		out++
		b, _ := json.Marshal(e)
		bytes += len(b)
	}
	if out == 0 || bytes > limit {
		t.Errorf("%d tool.update events of %d bytes published, want some and at most %d bytes", out, bytes, limit)
	}
	// Progress frames are best effort on the bus: a flood may lose some
	// before they reach the orchestrator, which counts what it dropped.
	if d, _ := notice["updates"].(float64); notice == nil || d < 1 || int(d) > sent-out || notice["limit_bytes"] != float64(limit) {
		t.Errorf("notice of the dropped updates = %v, want up to %d dropped of a limit of %d", notice, sent-out, limit)
	}
	t.Logf("%d of %d updates published (%d attempts), %d bytes of events; %v", out, sent, end.Attempt, bytes, notice)
	if o, err := f.orch.CallTool(ctx, "default", "flood", agentfleet.ToolCall{Name: "say", Arguments: map[string]any{"text": "still"}}, nil); err != nil || o.IsError {
		t.Errorf("say after the flood = %+v, %v", o, err)
	}
}
