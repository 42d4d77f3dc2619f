// Package loop runs the agent loop of spec sections 5 and 6 for one session:
// it queues input, runs turns of model call and tool batch until the model
// stops, and emits the lifecycle events of every run.
//
// Its caller wires it once, when it builds the Session: the loop calls down
// into what its Config gives it, the Model, the tool pipeline, a Store for
// what it keeps (store.go) and a Sink for what it puts out (sink.go), and
// never back up into its caller otherwise. What fits in the context window
// and within the budgets is decided by internal/window. It imports the
// domain types, internal/pipeline, internal/tools, internal/tracing and
// internal/window, OpenTelemetry's API and uuid; never a transport (nats.go,
// the model's client) nor the orchestrator.
package loop

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/agentfleet/agentfleet/internal/window"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// DefaultMaxTurns bounds the turns of one run when Config.MaxTurns is zero.
const DefaultMaxTurns = 25

// Config configures a Session. Agent, Session and Model are required; every
// other field is optional, and its zero value means the documented default.
type Config struct {
	Agent   string
	Session string
	// Model answers the turns.
	Model Model
	// ModelName is passed to the model in every request; optional.
	ModelName string
	// SystemPrompt; default "You are a helpful assistant."
	SystemPrompt string
	// Tools is the agent's tool store; default an empty one.
	Tools *tools.Store
	// Pipeline configures tool execution. Its Sink, Agent, Session and RunID
	// are set by the session.
	Pipeline pipeline.Config
	// MaxTurns bounds the model calls of one run; default DefaultMaxTurns.
	MaxTurns int
	// PrepareContext and Format are the hooks of spec section 14; default
	// the context policy (Context) and DefaultFormat.
	PrepareContext PrepareContextFunc
	Format         FormatFunc
	// Context keeps each request within the model's context window, when
	// PrepareContext is not set; its zero value sends the history whole
	// until the model refuses a request as too long.
	Context window.Policy
	// Budget bounds the tokens, tool calls and cost of runs; zero fields,
	// none.
	Budget window.Budget
	// AgentCost, if set, returns what the agent's model calls cost today
	// across the fleet, for Budget.MaxCostPerAgent; default 0.
	AgentCost func() float64
	// Priority is the priority of the agent's model calls (Request.Priority),
	// for a fleet-wide quota; a run's input may choose another. Optional.
	Priority string
	// Summary is the session's last stored summary (the summarize
	// strategy), for a session that resumes.
	Summary *agentfleet.ContextSummary
	// Store keeps the history, summaries and run ends (store.go); default
	// none: the history is kept in memory only.
	Store Store
	// Recover, if set, is asked about each call of a tool that is neither
	// idempotent nor read-only found without a result when a run resumes:
	// a non-nil answer is the call's (a Result its worker recorded, or a
	// Block saying what is known); nil, or an error, leaves the call of
	// unknown outcome (UnknownOutcomeText). Default none.
	Recover pipeline.BeforeHook
	// Sink receives every lifecycle event, envelope filled in, in sequence
	// order, and the outcome of every run (sink.go); default none.
	Sink Sink
	// History is the conversation so far, with the run of each message, for
	// a session that resumes.
	History []Entry
	// Tracer, if set, records each run as a span, with a span for each of
	// its turns, model calls and tool calls (trace.go). A run's span is a
	// child of the trace context its first input was sent with
	// (SendContext).
	Tracer trace.Tracer
	// TraceAttributes go on every run's span besides the loop's own (the
	// orchestrator's id).
	TraceAttributes []attribute.KeyValue
}

// Entry is one message of a history with the run that added it, and, for
// a user message, the trace context it was sent with, if any: a run
// resumed from the history is traced under that of its first message.
type Entry struct {
	RunID   string
	Message agentfleet.Message
	Trace   trace.SpanContext
}

// ErrSuspended is the cause of a run that stopped before its end, to be
// resumed elsewhere: Suspend was called, or a message of the run could not
// be stored.
var ErrSuspended = errors.New("run suspended")

type suspendError struct{ err error }

func (e *suspendError) Error() string   { return "run suspended: " + e.err.Error() }
func (e *suspendError) Unwrap() []error { return []error{ErrSuspended, e.err} }

// DefaultSystemPrompt is the spec's default system prompt.
const DefaultSystemPrompt = "You are a helpful assistant."

// Session is one agent conversation. Input that arrives while a run is active
// waits for that run to end and then starts the next run (follow-up); only
// steering enters a running run, before its next model call. No message is
// lost or reordered. A Session is safe for concurrent use; it holds no
// goroutine while idle.
type Session struct {
	cfg *Config // shared by the sessions of one Template; never written
	// What the session has of its own (Own).
	session string
	store   Store
	sink    Sink
	exec    pipeline.Executor
	before  pipeline.BeforeHook

	emitMu sync.Mutex
	seq    uint64

	// tokens estimates requests; calibrated by every model response.
	tokens window.Estimator

	mu        sync.Mutex
	spentTok  int     // tokens of every model response in the history
	spentCost float64 // their cost, in US dollars
	summary   *agentfleet.ContextSummary
	history   []agentfleet.Message
	runOf     []string // the run of each history message
	// packed is the history and runOf of an idle session, packed
	// (packed.go); history and runOf are nil while it is set.
	packed   []byte
	halted   error      // set by Suspend: no run starts any more
	inbox    []*pending // follow-up input, taken when a run starts
	steering []*pending // steering input, taken before every model call
	arrivals uint64
	running  bool
	abort    context.CancelCauseFunc
	idle     chan struct{} // closed when the session becomes idle
	lastIdle time.Time
	runs     atomic.Uint64
	// parents holds, for each run of the history, the trace context of its
	// first message that came with one: the parent of the run's span if
	// it is resumed.
	parents map[string]trace.SpanContext
}

type pending struct {
	msg     *agentfleet.UserMessage
	arrival uint64
	reply   chan *agentfleet.AssistantMessage
	// resume names the run that took msg before a restart: msg is in the
	// history already, and that run goes on.
	resume string
	// parent is the trace context msg was sent with, if any.
	parent trace.SpanContext
}

// ErrAborted is the cause of a run's context when Abort ends it.
var ErrAborted = errors.New("run aborted")

// New returns an idle session.
func New(cfg Config) *Session {
	return NewTemplate(cfg).New(cfg.own())
}

// closedIdle is the idle channel of every session that is idle and has no
// one waiting on it: an idle session holds no channel of its own.
var closedIdle = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// New returns an idle session of the template's agent with what own gives.
func (t *Template) New(own Own) *Session {
	if own.Store == nil {
		own.Store = memoryStore{}
	}
	if own.Sink == nil {
		own.Sink = discard{}
	}
	s := &Session{
		cfg: &t.cfg, session: own.Session, store: own.Store, sink: own.Sink, exec: own.Executor, before: own.Before,
		idle: closedIdle, lastIdle: time.Now(), summary: own.Summary,
	}
	if own.Summary != nil {
		s.spentTok += window.TokensOf(own.Summary.Usage)
		s.spentCost += agentfleet.CostOf(own.Summary.Usage)
	}
	entries := orderResults(slices.Clone(own.History))
	if len(entries) > 0 {
		s.history = make([]agentfleet.Message, 0, len(entries))
		s.runOf = make([]string, 0, len(entries))
	}
	for _, e := range entries {
		s.history = append(s.history, e.Message)
		s.runOf = append(s.runOf, e.RunID)
		if e.Trace.IsValid() && t.cfg.Tracer != nil {
			if s.parents == nil {
				s.parents = map[string]trace.SpanContext{}
			}
			if _, ok := s.parents[e.RunID]; !ok {
				s.parents[e.RunID] = e.Trace
			}
		}
		s.spentTok += spentBy(e.Message)
		s.spentCost += costBy(e.Message)
	}
	return s
}

// Send queues an ordinary user message. When the session is idle it starts a
// run; otherwise the message waits for the active run to end. The returned
// channel receives the final message of the run that took the message.
func (s *Session) Send(m *agentfleet.UserMessage) <-chan *agentfleet.AssistantMessage {
	return s.enqueue(m, false, trace.SpanContext{})
}

// SendContext is Send for a message sent under the span of ctx: the run
// that takes it is traced as that span's child (or linked to it, when the
// run took an earlier message too).
func (s *Session) SendContext(ctx context.Context, m *agentfleet.UserMessage) <-chan *agentfleet.AssistantMessage {
	return s.enqueue(m, false, trace.SpanContextFromContext(ctx))
}

// Steer queues a steering message: it enters the active run before its next
// model call, or starts a run when the session is idle. The returned channel
// receives the final message of the run that took the message.
func (s *Session) Steer(m *agentfleet.UserMessage) <-chan *agentfleet.AssistantMessage {
	return s.enqueue(m, true, trace.SpanContext{})
}

// SteerContext is Steer for a message sent under the span of ctx; a run it
// joins is linked to that span.
func (s *Session) SteerContext(ctx context.Context, m *agentfleet.UserMessage) <-chan *agentfleet.AssistantMessage {
	return s.enqueue(m, true, trace.SpanContextFromContext(ctx))
}

// Resume continues the run runID, which the history (Config.History) holds
// without its end: the process that ran it stopped. It is taken before any
// input queued after it, in a run of its own. Tool calls of that run left
// without results are settled first: calls of idempotent or read-only tools
// run again, others get an error result saying their outcome is unknown. A
// run whose final answer is stored ends with it, without another model
// call. The returned channel receives the run's final message (nil if it is
// suspended again).
func (s *Session) Resume(runID string) <-chan *agentfleet.AssistantMessage {
	return s.enqueuePending(&pending{resume: runID, reply: make(chan *agentfleet.AssistantMessage, 1), parent: s.parents[runID]}, false)
}

// Interrupted returns the runs of the history that have messages but did
// not end, in the order they began; ended holds the runs that ended.
func Interrupted(history []Entry, ended func(runID string) bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range history {
		if e.RunID == "" || seen[e.RunID] {
			continue
		}
		seen[e.RunID] = true
		if !ended(e.RunID) {
			out = append(out, e.RunID)
		}
	}
	return out
}

func (s *Session) enqueue(m *agentfleet.UserMessage, steer bool, parent trace.SpanContext) <-chan *agentfleet.AssistantMessage {
	return s.enqueuePending(&pending{msg: m, reply: make(chan *agentfleet.AssistantMessage, 1), parent: parent}, steer)
}

func (s *Session) enqueuePending(p *pending, steer bool) <-chan *agentfleet.AssistantMessage {
	if m := p.msg; m != nil {
		if m.Role == "" {
			m.Role = agentfleet.RoleUser
		}
		if m.Timestamp.IsZero() {
			m.Timestamp = time.Now().UTC()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.halted != nil {
		p.reply <- nil
		return p.reply
	}
	s.arrivals++
	p.arrival = s.arrivals
	if steer {
		s.steering = append(s.steering, p)
	} else {
		s.inbox = append(s.inbox, p)
	}
	if !s.running {
		s.running = true
		s.idle = make(chan struct{})
		go s.serve()
	}
	return p.reply
}

// Abort ends the active run with stop reason aborted: it cancels the calls
// in flight and skips the rest. It reports whether a run was active. Queued
// follow-up input is kept and starts the next run.
func (s *Session) Abort(reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.abort == nil {
		return false
	}
	cause := ErrAborted
	if reason != "" {
		cause = &abortError{reason: reason}
	}
	s.abort(cause)
	return true
}

// Suspend stops the session for good: the active run stops at once without
// ending (its in-flight calls are cancelled, nothing more of it is stored,
// run.suspended instead of run.end), queued input is dropped, and no run
// starts any more; every waiting reply channel receives nil. The orchestrator
// calls it when it must leave the session to another (shutdown past its
// grace, lost lead, a fenced write); the stored history is where the next
// owner takes over. It reports whether a run was active.
func (s *Session) Suspend(why error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.halted == nil {
		s.halted = why
	}
	if s.abort == nil {
		return false
	}
	s.abort(&suspendError{err: why})
	return true
}

// Queued returns the number of input messages waiting for a run.
func (s *Session) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inbox) + len(s.steering)
}

type abortError struct{ reason string }

func (e *abortError) Error() string { return "run aborted: " + e.reason }
func (e *abortError) Unwrap() error { return ErrAborted }

// Running reports whether a run is active or about to start.
func (s *Session) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Wait blocks until the session is idle (no run active, no input queued) or
// ctx ends.
func (s *Session) Wait(ctx context.Context) error {
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// History returns a copy of the conversation.
func (s *Session) History() []agentfleet.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.packed != nil {
		history, _ := s.historyLocked() // decoded afresh: a copy already
		return history
	}
	return slices.Clone(s.history)
}

// view returns the history as it is, without a copy: messages are only
// ever appended (orderResultsOf reorders a copy), so the slice, capped at
// its length, never changes under its holder.
func (s *Session) view() []agentfleet.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unpackLocked()
	return s.history[:len(s.history):len(s.history)]
}

// runStart returns the index of the first message of run id in the
// history, or its length when it has none.
func (s *Session) runStart(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unpackLocked()
	for i, r := range s.runOf {
		if r == id {
			return i
		}
	}
	return len(s.runOf)
}

// currentSummary returns the session's summary, nil when none.
func (s *Session) currentSummary() *agentfleet.ContextSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.summary
}

func (s *Session) setSummary(sum *agentfleet.ContextSummary) {
	s.mu.Lock()
	s.summary = sum
	s.mu.Unlock()
}

// addSpent counts the usage u spent outside the history (summaries).
func (s *Session) addSpent(u *agentfleet.Usage) {
	s.mu.Lock()
	s.spentTok += window.TokensOf(u)
	s.spentCost += agentfleet.CostOf(u)
	s.mu.Unlock()
}

// spentUSD returns what the session's model responses have cost.
func (s *Session) spentUSD() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spentCost
}

// spent returns the tokens the session's model responses have used.
func (s *Session) spent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spentTok
}

// IdleSince reports whether the session is idle and, if so, since when.
func (s *Session) IdleSince() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastIdle, !s.running
}

// Runs returns the number of runs the session has finished.
func (s *Session) Runs() uint64 { return s.runs.Load() }

// serve runs queued input until none is left, then marks the session idle.
func (s *Session) serve() {
	for {
		s.mu.Lock()
		if s.halted != nil {
			for _, p := range append(s.inbox, s.steering...) {
				p.reply <- nil
			}
			s.inbox, s.steering = nil, nil
		}
		if len(s.inbox) == 0 && len(s.steering) == 0 {
			s.running = false
			s.abort = nil
			s.lastIdle = time.Now()
			close(s.idle)
			s.compactLocked()
			s.mu.Unlock()
			return
		}
		s.unpackLocked()
		ctx, cancel := context.WithCancelCause(context.Background())
		s.abort = cancel
		var first []*pending
		if len(s.inbox) > 0 && s.inbox[0].resume != "" {
			// A resumed run goes on alone; steering enters it before its
			// next model call, follow-ups wait for the next run.
			first, s.inbox = s.inbox[:1], s.inbox[1:]
		} else {
			first = mergeArrivals(s.inbox, s.steering)
			s.inbox, s.steering = nil, nil
		}
		s.mu.Unlock()

		r := &run{s: s, ctx: ctx, cancel: cancel}
		final := r.execute(first)
		cancel(nil)

		s.mu.Lock()
		s.abort = nil
		s.mu.Unlock()
		s.runs.Add(1)
		for _, p := range r.took {
			p.reply <- final
		}
	}
}

// takeSteering removes and returns the queued steering messages.
func (s *Session) takeSteering() []*pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.steering
	s.steering = nil
	return out
}

func mergeArrivals(a, b []*pending) []*pending {
	out := append(slices.Clone(a), b...)
	slices.SortFunc(out, func(x, y *pending) int { return cmp.Compare(x.arrival, y.arrival) })
	return out
}

// record appends m to the history in memory.
func (s *Session) record(runID string, m agentfleet.Message) {
	s.mu.Lock()
	s.spentTok += spentBy(m)
	s.spentCost += costBy(m)
	s.unpackLocked()
	s.history = append(s.history, m)
	s.runOf = append(s.runOf, runID)
	s.mu.Unlock()
}

// entries returns a copy of the history with the run of each message.
func (s *Session) entries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	history, runOf := s.historyLocked()
	out := make([]Entry, len(history))
	for i, m := range history {
		out[i] = Entry{RunID: runOf[i], Message: m}
	}
	return out
}

// emit fills the envelope of e and hands it to the sink. Sequence numbers are
// assigned under the same lock as delivery, so the sink sees them in order.
func (s *Session) emit(runID string, turn int, traceID string, e *agentfleet.Event) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.seq++
	e.Agent, e.Session, e.RunID, e.Turn, e.Seq, e.TraceID = s.cfg.Agent, s.session, runID, turn, s.seq, traceID
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	s.sink.Emit(e)
}
