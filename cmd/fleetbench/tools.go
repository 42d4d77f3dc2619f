package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/tools/builtin"
)

// The tools that benchmark workers serve.
const (
	toolEcho  = "bench_echo"
	toolSleep = "bench_sleep"
)

// echoDef is an echo-like tool: it answers {"text": s} with s.
var echoDef = agentfleet.ToolDef{
	Name:        toolEcho,
	Label:       "Bench echo",
	Description: "Returns the given text unchanged.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
	Annotations: agentfleet.Annotations{ReadOnly: true, Idempotent: true},
	Parallel:    true,
}

// sleepDef is a sleep-like tool: it waits {"ms": n} milliseconds, or the
// worker's own --delay when it has one, without progress reports.
var sleepDef = agentfleet.ToolDef{
	Name:        toolSleep,
	Label:       "Bench sleep",
	Description: "Waits the given number of milliseconds, then returns.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["ms"],"additionalProperties":false}`),
	Annotations: agentfleet.Annotations{Idempotent: true},
	Parallel:    true,
}

// payloadText returns a text of n bytes, the benchmark's argument and result.
func payloadText(n int) string {
	const alphabet = "the quick brown fox jumps over the lazy dog "
	return strings.Repeat(alphabet, n/len(alphabet)+1)[:n]
}

// gauge counts the calls a worker runs and the most it ran at once.
type gauge struct {
	calls    atomic.Uint64
	inFlight atomic.Int64
	peak     atomic.Int64
}

func (g *gauge) enter() {
	g.calls.Add(1)
	n := g.inFlight.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.inFlight.Add(-1) }

// benchTools returns the worker's tools, counting their calls in g. delay,
// when positive, replaces the sleep tool's argument.
func benchTools(g *gauge, delay time.Duration) []*agentfleet.Tool {
	echo := &agentfleet.Tool{ToolDef: echoDef, Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
		g.enter()
		defer g.leave()
		text, ok := call.Arguments["text"].(string)
		if !ok {
			return nil, fmt.Errorf("%s: argument \"text\" must be a string", toolEcho)
		}
		return agentfleet.TextResult(text), nil
	})}
	sleep := &agentfleet.Tool{ToolDef: sleepDef, Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
		g.enter()
		defer g.leave()
		d := delay
		if d <= 0 {
			ms, err := builtin.Int(call.Arguments["ms"])
			if err != nil {
				return nil, fmt.Errorf("%s: argument \"ms\" %v", toolSleep, err)
			}
			d = time.Duration(ms) * time.Millisecond
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return agentfleet.TextResult("slept"), nil
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", toolSleep, ctx.Err())
		}
	})}
	return []*agentfleet.Tool{echo, sleep}
}
