package script

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

// fuzzEnv are the limits of FuzzScript: small, so that the fuzzer finds
// what escapes them quickly.
var fuzzEnv = Env{MaxSteps: 1_000_000, Timeout: 200 * time.Millisecond * raceSlowdown, MaxMemory: 16 << 20}

// Bounds of FuzzScript. The memory budget counts what the bounded
// operations make; every step also makes a little garbage it does not
// count (the arguments of a call, a frame), bounded by the step limit; and
// the heap holds garbage until the collector runs.
const (
	fuzzGarbagePerStep = 64
	fuzzHeapSlack      = 32 << 20
)

// FuzzScript runs scripts with arguments in the sandbox and asserts that
// whatever they do, a call ends within twice the time limit and takes
// memory within the budget's bounds. The seeds include the bombs.
func FuzzScript(f *testing.F) {
	for _, b := range bombs {
		f.Add(b.code, `{"city":"x"}`)
	}
	f.Add("def execute(args):\n    return str(args['n'] * 'ab')\n", `{"n": 1000000000}`)
	f.Add("def execute(args):\n    return json.encode([args['s']] * args['n'])\n", `{"s": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "n": 10000000}`)
	f.Add("def execute(args):\n    return args['s'].replace('a', args['s'])\n", `{"s": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`)
	f.Add("def execute(args):\n    l = [args]\n    for i in range(30):\n        l = l + l\n    return str(len(l))\n", `{}`)
	f.Add("def execute(args):\n    return str(json.decode(args['j']))\n", `{"j": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"}`)
	f.Fuzz(func(t *testing.T, code, args string) {
		var a map[string]any
		if json.Unmarshal([]byte(args), &a) != nil {
			a = map[string]any{}
		}
		d := &Definition{Name: "fuzz", Description: "fuzzed", InputSchema: json.RawMessage(`{"type":"object"}`), Code: code}
		var tool *agentfleet.Tool
		u := measure(func() {
			var err error
			if tool, err = New(d, fuzzEnv); err == nil {
				tool.Handler.Call(context.Background(), &agentfleet.Call{ID: "f", Name: "fuzz", Arguments: a, Progress: func(any) {}})
			}
		})
		// New runs the top-level code and the call runs execute: two
		// time limits at most.
		if limit := 4 * fuzzEnv.Timeout; u.took > limit {
			t.Errorf("took %v, want at most %v (twice the time limit of load and call)", u.took, limit)
		}
		budget := uint64(2 * fuzzEnv.MaxMemory) // load and call
		if limit := 2*budget + fuzzHeapSlack; u.peak > limit {
			t.Errorf("the live heap grew by %d MiB, want at most %d MiB", u.peak>>20, limit>>20)
		}
		if limit := 2*budget + 2*fuzzGarbagePerStep*fuzzEnv.MaxSteps; u.alloc > limit {
			t.Errorf("allocated %d MiB, want at most %d MiB", u.alloc>>20, limit>>20)
		}
	})
}
