package script

import (
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// bombEnv are the limits the bombs run under. Each bomb must end by the
// limit it attacks (the memory budget, the size of an integer, the depth of
// nesting), never by time: how long a bomb takes to reach its budget is the
// machine's business (copying the 64 MiB a budget allows took 1s under the
// race detector on an idle machine and 7.5s with two CPU hogs beside it).
// So the time limit is only the net for a bomb that escapes every other
// limit, far above what any of them takes; such a bomb fails on its kind
// (ErrTime) and on the bound of checkBounds.
var bombEnv = Env{Timeout: time.Minute * raceSlowdown, MaxMemory: 64 << 20}

// bombs are scripts that take far more memory, time or stack in one step
// than their step count suggests. Each must end in a clear error of kind,
// saying want, within the bounds that checkBounds asserts.
var bombs = []struct {
	name string
	code string
	kind ErrorKind
	want string
}{
	{"json stack", "def execute(args):\n    s = '[' * 2000000 + ']' * 2000000\n    return json.decode(s)\n",
		ErrRuntime, "code:3:23: json.decode: the JSON nests deeper than 64 levels (at byte 64)"},
	{"list of range", "def execute(args):\n    n = 1 << 26\n    return str(len(list(range(n))))\n",
		ErrMemory, "code:3:24: memory budget of 64 MiB exceeded by list() of <range of 67108864 elements>"},
	{"replace", "def execute(args):\n    s = 'x' * 1000000\n    return s.replace('x', 'y' * 1000)\n",
		ErrMemory, `code:3:21: memory budget of 64 MiB exceeded by string.replace() of <string of 1000000 bytes>: 1000000 replacements of "x" by <string of 1000 bytes>`},
	{"doubling", "def execute(args):\n    s = 'x'\n    for i in range(64):\n        s = s + s\n    return s\n",
		ErrMemory, "code:4:15: memory budget of 64 MiB exceeded by concatenation (<string of 33554432 bytes> + <string of 33554432 bytes>)"},
	{"doubling in place", "def execute(args):\n    s = ['x']\n    for i in range(64):\n        s += s\n    return str(len(s))\n",
		ErrMemory, "code:4:11: memory budget of 64 MiB exceeded by list extension"},
	{"repetition", "def execute(args):\n    n = 1000000000\n    return 'x' * n\n",
		ErrMemory, `code:3:16: memory budget of 64 MiB exceeded by string repetition ("x" * 1000000000)`},
	{"comprehension", "def execute(args):\n    return str(len([i for i in range(1 << 26)]))\n",
		ErrMemory, "memory budget of 64 MiB exceeded by the elements of a comprehension"},
	{"dict growth", "def execute(args):\n    d = {}\n    for i in range(10000000):\n        d[i] = i\n    return str(len(d))\n",
		ErrMemory, "code:4:10: memory budget of 64 MiB exceeded by a new entry of <dict of"},
	{"append growth", "def execute(args):\n    l = []\n    for i in range(10000000):\n        l.append(i)\n    return str(len(l))\n",
		ErrMemory, "memory budget of 64 MiB exceeded by list.append()"},
	{"repr amplification", "def execute(args):\n    s = 'x' * 1000000\n    return str([s] * 1000)\n",
		ErrMemory, "memory budget of 64 MiB exceeded by str() of <list of 1000 elements>"},
	{"format amplification", "def execute(args):\n    s = 'x' * 1000000\n    return ('{0}' * 100).format(s)\n",
		ErrMemory, "memory budget of 64 MiB exceeded by string.format()"},
	{"percent amplification", "def execute(args):\n    s = 'x' * 1000000\n    return ('%(a)s' * 100) % {'a': s}\n",
		ErrMemory, "memory budget of 64 MiB exceeded by string formatting (%)"},
	{"join", "def execute(args):\n    s = 'x' * 1000000\n    return ','.join([s] * 100)\n",
		ErrMemory, "memory budget of 64 MiB exceeded by string.join()"},
	{"split amplification", "def execute(args):\n    s = ',' * 30000000\n    return str(len(s.split(',')))\n",
		ErrMemory, "memory budget of 64 MiB exceeded by string.split()"},
	{"json.encode amplification", "def execute(args):\n    s = 'x' * 1000000\n    return json.encode([s] * 100)\n",
		ErrMemory, "memory budget of 64 MiB exceeded by json.encode of <list of 100 elements>"},
	{"json.decode amplification", "def execute(args):\n    s = '[' + '0,' * 10000000 + '0]'\n    return str(len(json.decode(s)))\n",
		ErrMemory, "memory budget of 64 MiB exceeded by json.decode of <string of 20000003 bytes>"},
	{"integer squaring", "def execute(args):\n    x = 3\n    for i in range(40):\n        x = x * x\n    return str(x)\n",
		ErrRuntime, "integer multiplication (<int of 51937 bits> * <int of 51937 bits>) would make an integer of about 103874 bits; the limit is 65536 bits"},
	{"integer shift", "def execute(args):\n    x = 1\n    for i in range(1000):\n        x <<= 500\n    return str(x)\n",
		ErrRuntime, "left shift"},
	{"max of range", "def execute(args):\n    return str(max(range(1 << 62)))\n",
		ErrMemory, "memory budget of 64 MiB exceeded by max() of <range of 4611686018427387904 elements>"},
	{"sorted of range", "def execute(args):\n    return str(sorted(range(1 << 30))[0])\n",
		ErrMemory, "memory budget of 64 MiB exceeded by sorted() of <range of 1073741824 elements>"},
	{"int parse", "def execute(args):\n    return str(int('9' * 100000))\n",
		ErrRuntime, "int: a string of 100000 characters is longer than the limit of 4300 digits"},
	{"augmented index", "def execute(args):\n    d = {'k': 'x'}\n    for i in range(64):\n        d['k'] *= 2\n    return d['k']\n",
		ErrMemory, "memory budget of 64 MiB exceeded by string repetition"},
}

// growthBombs grow by small steps, each counted: whether they reach the
// memory budget, the step limit or the time limit first depends on the
// machine's speed, and each is a clean end.
var growthBombs = map[string]bool{"comprehension": true, "dict growth": true, "append growth": true}

func TestBombs(t *testing.T) {
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			tool := mustNew(t, def("bomb", b.code), bombEnv)
			var err error
			u := measure(func() { _, err = callTool(t, tool, map[string]any{"city": "x"}) })
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error = %v, want a script error", err)
			}
			if growthBombs[b.name] && (se.Kind == ErrTime || se.Kind == ErrSteps) {
				// The other clean end.
			} else if se.Kind != b.kind || !strings.Contains(se.Msg, b.want) {
				t.Errorf("error = %s (kind %s), want kind %s with %q", se.Msg, se.Kind, b.kind, b.want)
			}
			// Growth bombs make garbage at every step (the arguments of
			// each call, boxed values), which the budget does not
			// count; what they hold is bounded all the same.
			checkBounds(t, bombEnv, u, !growthBombs[b.name])
			t.Logf("%s: %v, %d MiB allocated, live heap +%d MiB: %s", b.name, u.took.Round(time.Millisecond), u.alloc>>20, u.peak>>20, se.Msg)
		})
	}
}

// usage is what a call took.
type usage struct {
	took time.Duration
	// alloc is the bytes the process allocated meanwhile (TotalAlloc).
	alloc uint64
	// peak is the most the live heap grew meanwhile, sampled every
	// millisecond.
	peak uint64
}

// measure runs f and returns what it took.
func measure(f func()) usage {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	live := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	base := live()
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var most uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if n := live(); n > base && n-base > most {
				most = n - base
			}
			select {
			case <-done:
				peak <- most
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	f()
	u := usage{took: time.Since(start)}
	close(done)
	u.peak = <-peak
	runtime.ReadMemStats(&after)
	u.alloc = after.TotalAlloc - before.TotalAlloc
	return u
}

// checkBounds asserts that a call took at most twice the time limit and
// that the live heap grew by at most twice the memory budget; with
// allocTotal, also that it allocated at most that much in all.
func checkBounds(t *testing.T, env Env, u usage, allocTotal bool) {
	t.Helper()
	if limit := 2 * env.Timeout; u.took > limit {
		t.Errorf("took %v, want at most %v (twice the time limit)", u.took, limit)
	}
	limit := uint64(2 * env.MaxMemory)
	if u.peak > limit {
		t.Errorf("the live heap grew by %d MiB, want at most %d MiB (twice the memory budget)", u.peak>>20, limit>>20)
	}
	if allocTotal && u.alloc > limit {
		t.Errorf("allocated %d MiB, want at most %d MiB (twice the memory budget)", u.alloc>>20, limit>>20)
	}
}
