package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/prometheus/client_golang/prometheus"
)

// Orchestrator holds the metrics of an orchestrator. It implements the
// orchestrator's Observer (Event, Input, ToolAttempt); LLMRequest,
// EventPublished and SetSessions take what the Observer does not carry.
// Every method is safe for concurrent use, and cheap enough to call inline
// from the agent loop.
type Orchestrator struct {
	reg *prometheus.Registry

	runsStarted   prometheus.Counter
	leaseLost     prometheus.Counter
	partitions    prometheus.Gauge
	runsEnded     *prometheus.CounterVec // stop_reason
	turns         prometheus.Counter
	runsActive    prometheus.Gauge
	sessions      intFunc
	llmDuration   prometheus.Histogram
	llmAttempts   prometheus.Counter
	llmErrors     *prometheus.CounterVec // class
	inputTokens   prometheus.Counter
	outputTokens  prometheus.Counter
	toolDuration  *prometheus.HistogramVec // tool, outcome
	toolAttempts  *prometheus.CounterVec   // tool, outcome
	toolsInFlight prometheus.Gauge
	input         *prometheus.CounterVec   // outcome
	published     *prometheus.CounterVec   // type
	approvals     *prometheus.CounterVec   // decision
	approvalWait  *prometheus.HistogramVec // decision
	runTokens     prometheus.Histogram
	compactions   *prometheus.CounterVec // reason
	budgets       *prometheus.CounterVec // budget
	quota         quotaMetrics

	tools, stopReasons, classes, attemptOutcomes, inputOutcomes, eventTypes *bounded

	workersOnce sync.Once
	workers     *Worker
}

// The label values created at zero, so that their series exist (and rate()
// works) before the first one is counted.
var (
	// The stop reasons of a run's final message (tool_use ends a model
	// call, never a run).
	stopReasons = []agentfleet.StopReason{
		agentfleet.StopReasonStop, agentfleet.StopReasonToolTerminated,
		agentfleet.StopReasonAborted, agentfleet.StopReasonMaxTurns, agentfleet.StopReasonError,
		agentfleet.StopReasonLength, agentfleet.StopReasonBudget,
	}
	// llmClasses are the classes internal/llm.Class returns.
	llmClasses = []string{"rate_limit", "server", "timeout", "connection", "client", "context_length", "canceled", "other"}
	// inputOutcomes are the outcomes of Input (bus.Input.OnInput).
	inputOutcomes = []string{"accepted", "duplicate", "rejected", "retried"}
	eventTypes    = []agentfleet.EventType{
		agentfleet.EventRunStart, agentfleet.EventRunEnd, agentfleet.EventRunSuspended, agentfleet.EventRunResumed, agentfleet.EventTurnStart, agentfleet.EventTurnEnd,
		agentfleet.EventMessageStart, agentfleet.EventMessageUpdate, agentfleet.EventMessageEnd,
		agentfleet.EventToolStart, agentfleet.EventToolUpdate, agentfleet.EventToolEnd, agentfleet.EventToolApproval, agentfleet.EventError,
		agentfleet.EventContextCompacted, agentfleet.EventBudgetExceeded, agentfleet.EventSessionHandoff, agentfleet.EventModelWaiting,
	}
	// compactReasons are the reasons of context.compacted events.
	compactReasons = []string{"window", "context_length_exceeded"}
	// budgetNames are the budgets of budget.exceeded events.
	budgetNames = []string{"max_tokens_per_run", "max_tokens_per_session", "max_tool_calls_per_run", "max_cost_per_run", "max_cost_per_session", "max_cost_per_agent"}
	// approvalDecisions are the labels of approvals_total: requested,
	// then one of the decisions.
	approvalDecisions = []string{"requested", agentfleet.ApprovalApproved, agentfleet.ApprovalRejected, agentfleet.ApprovalTimedOut}
)

// NewOrchestrator returns the metrics of an orchestrator on a registry of
// their own, which also holds the Go and process collectors.
func NewOrchestrator() *Orchestrator {
	o := &Orchestrator{
		reg:             newRegistry(),
		tools:           newBounded(MaxTools),
		stopReasons:     newBounded(maxEnum),
		classes:         newBounded(maxEnum),
		attemptOutcomes: newBounded(maxEnum),
		inputOutcomes:   newBounded(maxEnum),
		eventTypes:      newBounded(maxEnum),
	}
	o.leaseLost = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "lease_lost_total",
		Help: "Times this orchestrator lost its lease (it then suspends every run, owns no partition, and joins again).",
	})
	o.partitions = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "partitions_owned",
		Help: "Session partitions this orchestrator owns (of 64; 0 without JetStream, where it serves every session).",
	})
	o.runsStarted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "runs_started_total",
		Help: "Agent runs started.",
	})
	o.runsEnded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "runs_ended_total",
		Help: "Agent runs ended, by the stop reason of their final message.",
	}, []string{"stop_reason"})
	o.turns = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "turns_total",
		Help: "Turns of the agent loop: one model call and the tool calls it asks for.",
	})
	o.runsActive = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "runs_active",
		Help: "Agent runs started and not yet ended.",
	})
	sessions := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "sessions",
		Help: "Sessions held in memory by the orchestrator.",
	}, o.sessions.get)
	o.llmDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "llm_request_duration_seconds",
		Help:    "Duration of each model request attempt, failed ones included, up to the end of its response.",
		Buckets: LLMBuckets,
	})
	o.llmAttempts = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "llm_attempts_total",
		Help: "Model request attempts, retries included.",
	})
	o.llmErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "llm_errors_total",
		Help: "Model request attempts that failed, by class of failure.",
	}, []string{"class"})
	tokens := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "llm_tokens_total",
		Help: "Tokens of model responses, as their usage reports them, by kind (input: the prompt, output: the completion).",
	}, []string{"kind"})
	o.inputTokens = tokens.WithLabelValues("input")
	o.outputTokens = tokens.WithLabelValues("output")
	o.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "tool_call_duration_seconds",
		Help:    "Duration of tool calls as the agent loop sees them (every phase, every attempt), by tool and outcome (ok, error, not_found, invalid, blocked, aborted, skipped, timeout, worker_lost, no_responders, truncated).",
		Buckets: ToolBuckets,
	}, []string{"tool", "outcome"})
	o.toolAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "tool_attempts_total",
		Help: "Attempts of tool calls sent to the fleet, by tool and outcome (ok, error, busy, timeout, aborted, worker_lost, no_responders).",
	}, []string{"tool", "outcome"})
	o.toolsInFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "tool_calls_in_flight",
		Help: "Tool calls started by the agent loop and not yet ended.",
	})
	o.input = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "input_messages_total",
		Help: "Messages from clients, by outcome (accepted, duplicate, rejected).",
	}, []string{"outcome"})
	o.published = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "events_published_total",
		Help: "Lifecycle events published on NATS, by type.",
	}, []string{"type"})

	o.approvals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "approvals_total",
		Help: "Tool calls that waited for a person's approval, by decision: requested (each wait, a wait taken up again after a restart included), approved, rejected, timed_out.",
	}, []string{"decision"})
	o.approvalWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "approval_decision_seconds",
		Help:    "Time from a call's approval request to its decision, by decision (approved, rejected, timed_out).",
		Buckets: ApprovalBuckets,
	}, []string{"decision"})

	o.runTokens = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "run_tokens",
		Help:    "Tokens of each ended run (input plus output, over its model responses), as their usage reports them.",
		Buckets: RunTokenBuckets,
	})
	o.compactions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "context_compactions_total",
		Help: "Model requests that left out or shortened part of the history to fit the context window, by reason (window: by the estimate; context_length_exceeded: the model refused the request, which was sent again shorter).",
	}, []string{"reason"})
	o.budgets = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "budget_exceeded_total",
		Help: "Runs stopped by a budget, by budget (max_tokens_per_run, max_tokens_per_session, max_tool_calls_per_run, max_cost_per_run, max_cost_per_session, max_cost_per_agent).",
	}, []string{"budget"})
	for _, r := range compactReasons {
		o.compactions.WithLabelValues(r)
	}
	for _, b := range budgetNames {
		o.budgets.WithLabelValues(b)
	}

	o.reg.MustRegister(o.runTokens, o.compactions, o.budgets, o.leaseLost, o.partitions, o.runsStarted, o.runsEnded, o.turns, o.runsActive, sessions,
		o.llmDuration, o.llmAttempts, o.llmErrors, tokens,
		o.toolDuration, o.toolAttempts, o.toolsInFlight, o.input, o.published, o.approvals, o.approvalWait)
	o.quota = newQuotaMetrics(o.reg)
	for _, d := range approvalDecisions {
		o.approvals.WithLabelValues(d)
	}

	for _, r := range stopReasons {
		o.runsEnded.WithLabelValues(o.stopReasons.value(string(r)))
	}
	for _, c := range llmClasses {
		o.llmErrors.WithLabelValues(o.classes.value(c))
	}
	for _, v := range inputOutcomes {
		o.input.WithLabelValues(o.inputOutcomes.value(v))
	}
	for _, t := range eventTypes {
		o.published.WithLabelValues(o.eventTypes.value(string(t)))
	}
	return o
}

// Registry returns the registry that holds o's metrics, for Listen.
func (o *Orchestrator) Registry() *prometheus.Registry { return o.reg }

// Event counts one lifecycle event of the agent loop: runs on run.start and
// run.end (and the tokens of the run, from the usage of its final message),
// compactions on context.compacted, budgets on budget.exceeded, turns on turn.start, tokens on message.end (from the usage of
// its assistant message), tool calls on tool.start and tool.end (duration
// and outcome). It implements orchestrator.Observer; the orchestrator calls
// it for every event its loops emit, before publishing it.
func (o *Orchestrator) Event(e *agentfleet.Event) {
	switch e.Type {
	case agentfleet.EventRunStart:
		o.runsStarted.Inc()
		o.runsActive.Inc()
	case agentfleet.EventRunEnd:
		o.runsEnded.WithLabelValues(o.stopReasons.value(string(e.StopReason))).Inc()
		o.runsActive.Dec()
		if e.Message != nil && e.Message.Usage != nil {
			u := e.Message.Usage
			n := u.InputTokens + u.OutputTokens
			if n == 0 {
				n = u.TotalTokens
			}
			o.runTokens.Observe(float64(n))
		}
	case agentfleet.EventContextCompacted:
		if slices.Contains(compactReasons, e.Reason) {
			o.compactions.WithLabelValues(e.Reason).Inc()
		}
	case agentfleet.EventBudgetExceeded:
		if slices.Contains(budgetNames, e.Budget) {
			o.budgets.WithLabelValues(e.Budget).Inc()
		}
	case agentfleet.EventRunResumed:
		o.runsActive.Inc()
	case agentfleet.EventRunSuspended:
		o.runsActive.Dec()
	case agentfleet.EventTurnStart:
		o.turns.Inc()
	case agentfleet.EventMessageEnd:
		// run.end carries the usage of the whole run: count tokens here
		// only, once per model response.
		if e.Message != nil && e.Message.Usage != nil {
			if n := e.Message.Usage.InputTokens; n > 0 {
				o.inputTokens.Add(float64(n))
			}
			if n := e.Message.Usage.OutputTokens; n > 0 {
				o.outputTokens.Add(float64(n))
			}
		}
	case agentfleet.EventToolApproval:
		switch e.Decision {
		case agentfleet.ApprovalPending:
			o.approvals.WithLabelValues("requested").Inc()
		case agentfleet.ApprovalApproved, agentfleet.ApprovalRejected, agentfleet.ApprovalTimedOut:
			o.approvals.WithLabelValues(e.Decision).Inc()
			o.approvalWait.WithLabelValues(e.Decision).Observe(e.DurationMS / 1000)
		}
	case agentfleet.EventToolStart:
		o.toolsInFlight.Inc()
	case agentfleet.EventToolEnd:
		o.toolsInFlight.Dec()
		outcome := e.Outcome
		if outcome == "" {
			outcome = "ok"
			if e.IsError {
				outcome = "error"
			}
		}
		o.toolDuration.WithLabelValues(o.tools.value(e.ToolName), o.attemptOutcomes.value(outcome)).Observe(e.DurationMS / 1000)
	}
}

// Input counts one message from a client by its outcome: "accepted",
// "duplicate" or "rejected". It implements orchestrator.Observer.
func (o *Orchestrator) Input(outcome string) {
	o.input.WithLabelValues(o.inputOutcomes.value(outcome)).Inc()
}

// ToolAttempt counts one attempt of a tool call on the fleet by its outcome:
// "ok", "error", "busy", "timeout", "aborted", "worker_lost" or
// "no_responders" (those of bus.ClientConfig.Observe). It implements
// orchestrator.Observer.
func (o *Orchestrator) ToolAttempt(tool, outcome string) {
	o.toolAttempts.WithLabelValues(o.tools.value(tool), o.attemptOutcomes.value(outcome)).Inc()
}

// LLMRequest records one attempt of a model request that took d: every
// call counts an attempt and observes its duration; one whose err is not
// nil also counts an error of the given class (the class of
// internal/llm.Class(err); "other" when empty). Call it once per HTTP
// attempt, retries included, when the attempt's response has been read to
// its end or has failed.
func (o *Orchestrator) LLMRequest(d time.Duration, err error, class string) {
	o.llmAttempts.Inc()
	o.llmDuration.Observe(d.Seconds())
	if err != nil {
		if class == "" {
			class = "other"
		}
		o.llmErrors.WithLabelValues(o.classes.value(class)).Inc()
	}
}

// EventPublished counts one event published on NATS. Its signature is that
// of bus.Publisher.OnPublish, which also sees the events that the
// orchestrator publishes outside the loop (errors about rejected input).
func (o *Orchestrator) EventPublished(t agentfleet.EventType) {
	o.published.WithLabelValues(o.eventTypes.value(string(t))).Inc()
}

// SetSessions makes the agentfleet_sessions gauge read f (the
// orchestrator's Sessions method) at each scrape. Until it is called the
// gauge reads 0. f must be safe to call from any goroutine.
func (o *Orchestrator) SetSessions(f func() int) { o.sessions.set(f) }

// Workers returns worker metrics registered on o's registry, for the tool
// workers that run inside the orchestrator process, so that one /metrics
// shows both. Every call returns the same *Worker; the workers share it.
func (o *Orchestrator) Workers() *Worker {
	o.workersOnce.Do(func() { o.workers = newWorker(o.reg) })
	return o.workers
}

// LeaseLost counts one loss of the lease.
func (o *Orchestrator) LeaseLost() { o.leaseLost.Inc() }

// PartitionsOwned sets the partitions_owned gauge; the orchestrator calls
// it as partitions come and go.
func (o *Orchestrator) PartitionsOwned(n int) { o.partitions.Set(float64(n)) }
