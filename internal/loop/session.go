// Package loop runs the agent loop of spec sections 5 and 6 for one session:
// it queues input, runs turns of model call and tool batch until the model
// stops, and emits the lifecycle events of every run.
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
	// DefaultPrepareContext and DefaultFormat.
	PrepareContext PrepareContextFunc
	Format         FormatFunc
	// Sink receives every lifecycle event, envelope filled in, in sequence
	// order. Emit is called with no session lock held, one event at a time.
	Sink agentfleet.EventSink
	// History is the conversation so far, for a session that resumes.
	History []agentfleet.Message
	// OnAppend, if set, is called with each message as it is appended to
	// the history, in order (for storage).
	OnAppend func(runID string, m agentfleet.Message)
	// OnRunEnd, if set, is called with the final message of each run.
	OnRunEnd func(final *agentfleet.AssistantMessage)
}

// DefaultSystemPrompt is the spec's default system prompt.
const DefaultSystemPrompt = "You are a helpful assistant."

// Session is one agent conversation. Input that arrives while a run is active
// waits for that run to end and then starts the next run (follow-up); only
// steering enters a running run, before its next model call. No message is
// lost or reordered. A Session is safe for concurrent use; it holds no
// goroutine while idle.
type Session struct {
	cfg Config

	emitMu sync.Mutex
	seq    uint64

	mu       sync.Mutex
	history  []agentfleet.Message
	inbox    []*pending // follow-up input, taken when a run starts
	steering []*pending // steering input, taken before every model call
	arrivals uint64
	running  bool
	abort    context.CancelCauseFunc
	idle     chan struct{} // closed when the session becomes idle
	lastIdle time.Time
	runs     atomic.Uint64
}

type pending struct {
	msg     *agentfleet.UserMessage
	arrival uint64
	reply   chan *agentfleet.AssistantMessage
	// resume names the run that took msg before a restart: msg is in the
	// history already, and that run goes on.
	resume string
}

// ErrAborted is the cause of a run's context when Abort ends it.
var ErrAborted = errors.New("run aborted")

// New returns an idle session.
func New(cfg Config) *Session {
	if cfg.SystemPrompt == "" {
		cfg.SystemPrompt = DefaultSystemPrompt
	}
	if cfg.Tools == nil {
		cfg.Tools = tools.NewStore(cfg.Agent)
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.PrepareContext == nil {
		cfg.PrepareContext = DefaultPrepareContext
	}
	if cfg.Format == nil {
		cfg.Format = DefaultFormat
	}
	s := &Session{cfg: cfg, history: slices.Clone(cfg.History), idle: make(chan struct{}), lastIdle: time.Now()}
	close(s.idle)
	return s
}

// Send queues an ordinary user message. When the session is idle it starts a
// run; otherwise the message waits for the active run to end. The returned
// channel receives the final message of the run that took the message.
func (s *Session) Send(m *agentfleet.UserMessage) <-chan *agentfleet.AssistantMessage {
	return s.enqueue(m, false)
}

// Steer queues a steering message: it enters the active run before its next
// model call, or starts a run when the session is idle. The returned channel
// receives the final message of the run that took the message.
func (s *Session) Steer(m *agentfleet.UserMessage) <-chan *agentfleet.AssistantMessage {
	return s.enqueue(m, true)
}

// Resume continues the run runID, which took m before the process stopped:
// m is already in the history (Config.History) and is not appended again.
// Tool calls of that run left without results are settled first: calls of
// idempotent or read-only tools run again, others get an error result saying
// their outcome is unknown. The returned channel receives the run's final
// message.
func (s *Session) Resume(runID string, m *agentfleet.UserMessage) <-chan *agentfleet.AssistantMessage {
	return s.enqueuePending(&pending{msg: m, resume: runID, reply: make(chan *agentfleet.AssistantMessage, 1)}, false)
}

func (s *Session) enqueue(m *agentfleet.UserMessage, steer bool) <-chan *agentfleet.AssistantMessage {
	return s.enqueuePending(&pending{msg: m, reply: make(chan *agentfleet.AssistantMessage, 1)}, steer)
}

func (s *Session) enqueuePending(p *pending, steer bool) <-chan *agentfleet.AssistantMessage {
	m := p.msg
	if m.Role == "" {
		m.Role = agentfleet.RoleUser
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = time.Now().UTC()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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
	return slices.Clone(s.history)
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
		if len(s.inbox) == 0 && len(s.steering) == 0 {
			s.running = false
			s.abort = nil
			s.lastIdle = time.Now()
			close(s.idle)
			s.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		s.abort = cancel
		first := mergeArrivals(s.inbox, s.steering)
		s.inbox, s.steering = nil, nil
		s.mu.Unlock()

		r := &run{s: s, ctx: ctx}
		final := r.execute(first)
		cancel(nil)

		s.mu.Lock()
		s.abort = nil
		s.mu.Unlock()
		s.runs.Add(1)
		// OnRunEnd (which stores the end of the run) comes before the
		// replies, so that whoever is told a run ended can rely on it.
		if s.cfg.OnRunEnd != nil {
			s.cfg.OnRunEnd(final)
		}
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

func (s *Session) append(runID string, m agentfleet.Message) {
	s.mu.Lock()
	s.history = append(s.history, m)
	s.mu.Unlock()
	if s.cfg.OnAppend != nil {
		s.cfg.OnAppend(runID, m)
	}
}

// emit fills the envelope of e and hands it to the sink. Sequence numbers are
// assigned under the same lock as delivery, so the sink sees them in order.
func (s *Session) emit(runID string, turn int, e *agentfleet.Event) {
	if s.cfg.Sink == nil {
		return
	}
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.seq++
	e.Agent, e.Session, e.RunID, e.Turn, e.Seq = s.cfg.Agent, s.cfg.Session, runID, turn, s.seq
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	s.cfg.Sink.Emit(e)
}
