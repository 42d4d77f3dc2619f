package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Worker holds the metrics of a tool worker. Its methods are safe for
// concurrent use.
type Worker struct {
	reg *prometheus.Registry

	calls    *prometheus.CounterVec   // tool, outcome
	duration *prometheus.HistogramVec // tool
	rejected *prometheus.CounterVec   // tool
	inFlight intFunc
	limit    intFunc

	tools, outcomes *bounded
}

// NewWorker returns the metrics of a tool worker on a registry of their
// own, which also holds the Go and process collectors.
func NewWorker() *Worker {
	return newWorker(newRegistry())
}

func newWorker(reg *prometheus.Registry) *Worker {
	w := &Worker{reg: reg, tools: newBounded(MaxTools), outcomes: newBounded(maxEnum)}
	w.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "worker_calls_total",
		Help: "Tool calls that reached this worker, by tool and outcome (ok, error, canceled, busy, bad_request, too_large, no_reply, fenced).",
	}, []string{"tool", "outcome"})
	w.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "worker_call_duration_seconds",
		Help:    "Duration of the tool calls this worker ran, from request to final frame, by tool; calls refused as busy or malformed are not included.",
		Buckets: ToolBuckets,
	}, []string{"tool"})
	w.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "worker_calls_rejected_total",
		Help: "Tool calls refused because the worker was at its concurrency limit (outcome busy), by tool.",
	}, []string{"tool"})
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "worker_calls_in_flight",
		Help: "Tool calls running on this worker.",
	}, w.inFlight.get)
	limit := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "worker_concurrency_limit",
		Help: "Tool calls this worker runs at once; more are refused as busy.",
	}, w.limit.get)
	reg.MustRegister(w.calls, w.duration, w.rejected, inFlight, limit)
	return w
}

// Registry returns the registry that holds w's metrics, for Listen. For
// the workers of Orchestrator.Workers it is the orchestrator's.
func (w *Worker) Registry() *prometheus.Registry { return w.reg }

// Observe records one call that ended on the worker with the given outcome
// after d. Its signature is that of bus.ServerConfig.Observe (and
// worker.Config.Observe), which reports the outcomes "ok", "error",
// "canceled", "busy", "bad_request", "too_large", "no_reply" and "fenced".
// A "busy" call also counts as rejected; it, a "bad_request", a "no_reply"
// one (a request without a reply subject) and a "fenced" one (a call of a
// deposed owner) never ran, so their durations are not observed.
func (w *Worker) Observe(tool, outcome string, d time.Duration) {
	tool = w.tools.value(tool)
	w.calls.WithLabelValues(tool, w.outcomes.value(outcome)).Inc()
	switch outcome {
	case "busy":
		w.rejected.WithLabelValues(tool).Inc()
	case "bad_request", "no_reply", "fenced":
	default:
		w.duration.WithLabelValues(tool).Observe(d.Seconds())
	}
}

// SetCapacity makes the agentfleet_worker_calls_in_flight and
// agentfleet_worker_concurrency_limit gauges read inFlight and limit (a
// bus.ToolServer's InFlight and Concurrency, or their sums over the servers
// of the process) at each scrape. Until it is called both read 0. The
// funcs must be safe to call from any goroutine; a nil one reads 0.
func (w *Worker) SetCapacity(inFlight, limit func() int) {
	w.inFlight.set(inFlight)
	w.limit.set(limit)
}
