package scripts

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/script"
)

// benchDef is a small, typical scripted tool: a loop and a dict result.
var benchDef = &script.Definition{
	Name: "sum", Description: "sums 1..n", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
	Code: "def execute(args):\n    t = 0\n    for i in range(args['n']):\n        t += i\n    return {'content': str(t), 'details': {'n': args['n']}}\n",
}

// BenchmarkScriptCall is the cost of one call of a scripted tool's handler
// in the worker's process and in a child process (process isolation: start,
// load, run, answer). BENCHMARKS.md has the figures.
func BenchmarkScriptCall(b *testing.B) {
	args := map[string]any{"n": 1000}
	b.Run("in-process", func(b *testing.B) {
		t, err := script.New(benchDef, script.Env{})
		if err == nil {
			t, err = script.WithChecks(t)
		}
		if err != nil {
			b.Fatal(err)
		}
		benchCalls(b, t, args)
	})
	b.Run("child-process", func(b *testing.B) {
		p, err := NewProcessRunner(script.Env{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		benchCalls(b, p.Tool(benchDef), args)
	})
}

func benchCalls(b *testing.B, t *agentfleet.Tool, args map[string]any) {
	for b.Loop() {
		res, err := t.Handler.Call(context.Background(), &agentfleet.Call{ID: "c", Name: t.Name, Arguments: args, Progress: func(any) {}})
		if err != nil || agentfleet.JoinText(res.Content) != "499500" {
			b.Fatalf("call = %v, %v", res, err)
		}
	}
}
