package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// quotaMetrics are the metrics of the fleet's model quota and of what
// model calls cost.
type quotaMetrics struct {
	cost   *prometheus.CounterVec   // agent, model
	queued *prometheus.GaugeVec     // priority
	waited *prometheus.HistogramVec // priority
	agents *bounded
	models *bounded
	ranks  *bounded
}

// quotaPriorities are the priority labels, created at zero.
var quotaPriorities = []string{"interactive", "default", "batch"}

func newQuotaMetrics(reg *prometheus.Registry) quotaMetrics {
	q := quotaMetrics{agents: newBounded(MaxTools), models: newBounded(MaxTools), ranks: newBounded(maxEnum)}
	q.cost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "model_cost_usd_total",
		Help: "What model calls cost, in US dollars, by agent and model, priced by the endpoints' price tables.",
	}, []string{"agent", "model"})
	q.queued = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "model_queue_depth",
		Help: "Model calls of this orchestrator waiting for the fleet's shared model quota, by priority.",
	}, []string{"priority"})
	q.waited = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "model_wait_seconds",
		Help:    "How long model calls waited for the fleet's shared model quota, by priority.",
		Buckets: []float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"priority"})
	for _, p := range quotaPriorities {
		q.queued.WithLabelValues(p)
		q.waited.WithLabelValues(p)
	}
	reg.MustRegister(q.cost, q.queued, q.waited)
	return q
}

// ModelCost counts usd spent by a model call of agent on model.
func (o *Orchestrator) ModelCost(agent, model string, usd float64) {
	if usd > 0 {
		o.quota.cost.WithLabelValues(o.quota.agents.value(agent), o.quota.models.value(model)).Add(usd)
	}
}

// Queued sets the model calls waiting at priority (limiter.Observer).
func (o *Orchestrator) Queued(priority string, n int) {
	o.quota.queued.WithLabelValues(o.quota.ranks.value(priority)).Set(float64(n))
}

// Waited records a model call's wait at priority (limiter.Observer).
func (o *Orchestrator) Waited(priority string, d time.Duration) {
	o.quota.waited.WithLabelValues(o.quota.ranks.value(priority)).Observe(d.Seconds())
}
