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

// TestProgressFloodIsBounded is the attack of a tool that floods its
// call's progress: 1000 updates of 100 kB against a bound of 1 MiB. The
// tool.update events that go out add up to no more than the bound, the
// rest are dropped, one last tool.update says how many, and the call
// still ends with its result; the next call has a bound of its own.
func TestProgressFloodIsBounded(t *testing.T) {
	const limit = 1 << 20
	chunk := strings.Repeat("p", 100_000)
	store := tools.NewStore("t")
	store.MustRegister(textTool("flood", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		for i := range 1000 {
			c.Progress(map[string]any{"i": i, "chunk": chunk})
		}
		return agentfleet.TextResult("flooded"), nil
	}))
	rec := &recorder{}
	p := pipeline.New(pipeline.Config{Sink: rec, MaxProgressBytes: limit})
	b := p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("c1", "flood", `{}`), call("c2", "flood", `{}`)})
	for _, o := range b.Outcomes {
		if o.IsError || agentfleet.JoinText(o.Result.Content) != "flooded" {
			t.Errorf("%s = %+v, want its result", o.Call.ID, o.Result)
		}
	}
	for _, id := range []string{"c1", "c2"} {
		var updates, bytes int
		var notice map[string]any
		for _, e := range rec.events {
			if e.ToolCallID != id || e.Type != agentfleet.EventToolUpdate {
				continue
			}
			m := e.Partial.(map[string]any)
			if d, ok := m[pipeline.ProgressDroppedKey]; ok {
				notice = d.(map[string]any)
				continue
			}
			if notice != nil {
				t.Errorf("%s: an update after the notice of the dropped ones", id)
			}
			updates++
			j, _ := json.Marshal(e)
			bytes += len(j)
		}
		if bytes > limit || updates == 0 {
			t.Errorf("%s: %d updates of %d bytes in all went out, want some and at most %d", id, updates, bytes, limit)
		}
		if notice == nil || notice["updates"] != 1000-updates || notice["limit_bytes"] != int64(limit) {
			t.Errorf("%s: notice %v, want %d updates dropped of a limit of %d", id, notice, 1000-updates, limit)
		}
		t.Logf("%s: %d updates, %d bytes of events out; %v", id, updates, bytes, notice)
	}
	if got := rec.events[len(rec.events)-1]; got.Type != agentfleet.EventToolEnd {
		t.Errorf("last event %s, want tool.end", got.Type)
	}
}
