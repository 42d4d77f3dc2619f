// Package metrics measures the fleet for Prometheus: Orchestrator counts
// runs, turns, model requests, tokens, tool calls and input; Worker counts
// the calls a tool worker serves; Server exposes either on /metrics beside
// /healthz and /readyz.
//
// Every metric is named agentfleet_*, in base units (seconds, tokens), with
// counters ending in _total. Labels never carry session, run or call ids:
// their values come from small fixed sets (outcomes, stop reasons, error
// classes, event types) or from the tool names of the fleet, and each label
// takes at most a bounded number of distinct values, past which further
// values are counted under "_other". Each Orchestrator and Worker keeps a
// registry of its own (not the global one), with the Go and process
// collectors; the in-process workers of Orchestrator.Workers share the
// orchestrator's, so that one /metrics shows both.
//
// metrics imports nothing of the fleet but the root package: the commands
// wire it to the orchestrator, the tool workers and the model client.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace is the prefix of every metric name.
const Namespace = "agentfleet"

// Other is the label value that stands for the values past a label's bound,
// and for values that are not a valid name (such as a tool name invented by
// a model).
const Other = "_other"

// Limits on the distinct values of one label.
const (
	// MaxTools bounds the tool names of one metric family. A fleet serves
	// far fewer tools; the bound is there because tool.end events carry
	// the name the model asked for, which may name no tool at all.
	MaxTools = 256
	// maxEnum bounds labels whose values come from a fixed set in the
	// code (outcomes, stop reasons, classes, event types).
	maxEnum = 32
)

// Buckets of the duration histograms, in seconds.
var (
	// ToolBuckets spans a fast local call (a few milliseconds) to the
	// longest tool timeouts (minutes).
	ToolBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	// LLMBuckets spans one model request, from a short cached answer to a
	// long streamed one (the default request timeout is 120s).
	// ApprovalBuckets bound the time a person takes to decide a call, from
	// a second to a day.
	ApprovalBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}
	LLMBuckets      = []float64{.1, .25, .5, 1, 2, 4, 8, 15, 30, 60, 120, 300}
	// RunTokenBuckets are the buckets of the tokens of one run.
	RunTokenBuckets = []float64{100, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1e6}
)

// newRegistry returns a registry holding the Go and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// bounded admits the values of one label: valid names, up to max distinct
// ones; anything else becomes Other. It is safe for concurrent use.
type bounded struct {
	max  int
	mu   sync.RWMutex
	seen map[string]struct{}
}

func newBounded(max int) *bounded {
	return &bounded{max: max, seen: map[string]struct{}{}}
}

// value returns v if it may be a label value, else Other.
func (b *bounded) value(v string) string {
	b.mu.RLock()
	_, ok := b.seen[v]
	b.mu.RUnlock()
	if ok {
		return v
	}
	if !validValue(v) {
		return Other
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[v]; ok {
		return v
	}
	if len(b.seen) >= b.max {
		return Other
	}
	b.seen[v] = struct{}{}
	return v
}

// validValue reports whether v looks like a name: 1 to 128 letters, digits,
// '-', '_' or '.' (the tool names the bus accepts, and event types).
func validValue(v string) bool {
	if v == "" || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// intFunc holds a func() int that may be set after the metric that reads it
// is registered: the commands build the metrics before the orchestrator or
// the worker whose numbers they read.
type intFunc struct {
	mu sync.RWMutex
	f  func() int
}

func (i *intFunc) set(f func() int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.f = f
}

// get returns the value of the func, 0 while none is set.
func (i *intFunc) get() float64 {
	i.mu.RLock()
	f := i.f
	i.mu.RUnlock()
	if f == nil {
		return 0
	}
	return float64(f())
}
