package metrics_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/metrics"
)

func TestWorkerCounts(t *testing.T) {
	w := metrics.NewWorker()
	s := serve(t, w.Registry(), nil)
	before := scrapeOf(t, s)
	if v := before.must(t, "agentfleet_worker_calls_in_flight"); v != 0 {
		t.Errorf("in flight before SetCapacity = %v, want 0", v)
	}

	var inFlight atomic.Int64
	inFlight.Store(3)
	w.SetCapacity(func() int { return int(inFlight.Load()) }, func() int { return 8 })
	for _, c := range []struct {
		tool, outcome string
		d             time.Duration
	}{
		{"calculator", "ok", 10 * time.Millisecond},
		{"calculator", "ok", 30 * time.Millisecond},
		{"calculator", "error", 20 * time.Millisecond},
		{"calculator", "busy", time.Microsecond},
		{"calculator", "busy", time.Microsecond},
		{"http_fetch", "canceled", 2 * time.Second},
		{"http_fetch", "too_large", time.Second},
		{"http_fetch", "bad_request", time.Microsecond},
	} {
		w.Observe(c.tool, c.outcome, c.d)
	}
	after := scrapeOf(t, s)
	checkDeltas(t, before, after, []delta{
		{"agentfleet_worker_calls_total", []string{"tool=calculator", "outcome=ok"}, 2},
		{"agentfleet_worker_calls_total", []string{"tool=calculator", "outcome=error"}, 1},
		{"agentfleet_worker_calls_total", []string{"tool=calculator", "outcome=busy"}, 2},
		{"agentfleet_worker_calls_total", []string{"tool=http_fetch", "outcome=canceled"}, 1},
		{"agentfleet_worker_calls_total", []string{"tool=http_fetch", "outcome=too_large"}, 1},
		{"agentfleet_worker_calls_total", []string{"tool=http_fetch", "outcome=bad_request"}, 1},
		{"agentfleet_worker_calls_rejected_total", []string{"tool=calculator"}, 2},
		// Refused calls (busy, bad_request) never ran: no duration.
		{"agentfleet_worker_call_duration_seconds_count", []string{"tool=calculator"}, 3},
		{"agentfleet_worker_call_duration_seconds_sum", []string{"tool=calculator"}, 0.06},
		{"agentfleet_worker_call_duration_seconds_count", []string{"tool=http_fetch"}, 2},
		{"agentfleet_worker_calls_in_flight", nil, 3},
		{"agentfleet_worker_concurrency_limit", nil, 8},
	})
	if _, ok := after.value("agentfleet_worker_calls_rejected_total", "tool=http_fetch"); ok {
		t.Error("http_fetch has a rejected series, but none of its calls was busy")
	}

	// The gauges read the funcs at each scrape.
	inFlight.Store(0)
	if v := scrapeOf(t, s).must(t, "agentfleet_worker_calls_in_flight"); v != 0 {
		t.Errorf("in flight = %v after the calls ended, want 0", v)
	}
}

// TestInProcessWorkers checks that the workers of an orchestrator process
// share its registry, so that one /metrics shows both, with one set of Go
// and process metrics.
func TestInProcessWorkers(t *testing.T) {
	o := metrics.NewOrchestrator()
	w := o.Workers()
	if o.Workers() != w {
		t.Fatal("Workers returned two different values")
	}
	if w.Registry() != o.Registry() {
		t.Fatal("the in-process workers have a registry of their own")
	}
	w.Observe("get_time", "ok", time.Millisecond)
	s := scrapeOf(t, serve(t, o.Registry(), nil))
	if v := s.must(t, "agentfleet_worker_calls_total", "tool=get_time", "outcome=ok"); v != 1 {
		t.Errorf("worker calls = %v, want 1", v)
	}
	s.must(t, "agentfleet_runs_started_total")
	s.must(t, "go_goroutines")
}
