package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/approval"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/inputpolicy"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/retention"
	"github.com/agentfleet/agentfleet/internal/smallmap"
	"go.opentelemetry.io/otel/trace"
)

// DefaultSessionQueue bounds the input one session holds waiting for runs.
const DefaultSessionQueue = 1000

// session is one agent session in memory: its loop, its history writer, and
// what it knows of its input (which run took each message id, which runs
// ended and with what) and of the deliveries waiting on its runs.
type session struct {
	o     *Orchestrator
	agent *agent
	name  string
	key   string
	part  int // its partition
	// fence is the ownership fence of its partition, taken when the
	// session came into memory; owner checks it. Every history write and
	// every acknowledgement of its input carries it.
	fence ownership.Fence
	owner ownership.Checker
	// ctx ends when the session is suspended, so that stores retrying for it
	// give up.
	ctx     context.Context
	cancel  context.CancelCauseFunc
	evicted atomic.Bool
	erased  atomic.Bool   // deleted (erase.go): nothing more of it is published
	ready   chan struct{} // closed when load is done, loaded or not

	mu      sync.Mutex
	loaded  bool
	resumed int              // interrupted runs load resumed, for the recovery summary
	backlog []*input.Inbound // input that arrived while loading
	loop    *loop.Session
	gate    *approval.Gate // the calls that wait for approval; nil until one may (gateLocked)
	writer  *history.Writer
	msgs    smallmap.Map[msgInfo] // by message id
	runs    smallmap.Map[runInfo] // by run id
	waiting int                   // deliveries waiting on runs, over all msgs
	stopped error                 // why the session was suspended
	// origins holds the parent of each run that answers another agent's
	// ask tool, from the run's stored user message (delegation.go); nil
	// until there is one.
	origins map[string]*agentfleet.Parent
	// serving is the agent that serves the session when its history
	// handed it over (handoff.go), set at load; nil for its own agent.
	// handedOver holds the runs of this load that handed it over, and
	// handoffEnded says one of them ended.
	serving      *agent
	handedOver   map[string]bool
	handoffEnded bool
	// model is the model its last forked record names, "" for its
	// agent's (forkmodel.go); set at load.
	model string

	// loadCancel ends the load of the stored history while it goes on;
	// s.mu held.
	loadCancel context.CancelFunc
	// keeper keeps the stored history within its agent's bounds
	// (retain.go); nil when none.
	keeper *retention.Keeper
}

// msgInfo is what a session knows of one message id.
type msgInfo struct {
	run     string             // the run that took it; "" while it is queued
	seq     uint64             // its input stream sequence, if known
	trace   *trace.SpanContext // the trace context it was sent with, if valid
	tickets []ticket           // deliveries waiting on its run
	// delivered: a delivery of it (not a copy read from the stream at load)
	// reached this process, so the next one is a duplicate.
	delivered bool
	// answered: the highest stream sequence of a copy whose delivery had
	// the stored answer published again (inputpolicy.Message.Answered).
	answered uint64
	// replied: the highest stream sequence of a relayed ask answered here
	// or to be (inputpolicy.Message.Replied).
	replied uint64
}

// ticket is a delivery waiting on a run. A silent one is settled when the
// run ends but not answered: another delivery of the same stream message
// (its copy read at load, say) has the answer.
type ticket struct {
	in     *input.Inbound
	silent bool
}

// runInfo is what a session knows of one run.
type runInfo struct {
	ids []string // the message ids it took
	// final is its final message, packed, set once it ended (final.go);
	// finalMsg instead for one that cannot be packed.
	final    []byte
	finalMsg *agentfleet.AssistantMessage
}

// msg returns the session's record of message id, making it if need be.
// Call it with s.mu held.
func (s *session) msg(id string) *msgInfo {
	m := s.msgs.Get(id)
	if m == nil {
		m = &msgInfo{}
		s.msgs.Put(id, m)
	}
	return m
}

// run returns the session's record of run id, making it if need be. Call it
// with s.mu held.
func (s *session) run(id string) *runInfo {
	r := s.runs.Get(id)
	if r == nil {
		r = &runInfo{}
		s.runs.Put(id, r)
	}
	return r
}

// hasEnded reports whether run id has ended; s.mu held.
func (s *session) hasEnded(id string) bool {
	r := s.runs.Get(id)
	return r != nil && r.ended()
}

// newSession makes the session of agent a named name; o.mu held.
func newSession(o *Orchestrator, a *agent, name, key string) *session {
	s := &session{o: o, agent: a, name: name, key: key, part: bus.Partition(a.profile.Name, name), ready: make(chan struct{})}
	s.owner, s.fence = ownership.Unfenced, ownership.Fence{Partition: s.part, Owner: o.id}
	if o.table != nil {
		// A partition not owned now gives a fence that never holds: the
		// session writes and acknowledges nothing.
		s.owner = o.table
		s.fence, _ = o.table.Fence(s.part)
	}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	return s
}

// load reads the session's stored history and its input still in the
// stream, builds its loop, resumes its interrupted runs, and then handles
// the stored input and whatever arrived meanwhile, in that order. It runs in
// its own goroutine, so that a slow store holds up this session only.
func (s *session) load(loads chan struct{}) {
	defer close(s.ready)
	o := s.o
	var (
		st      *history.Loaded
		pending []*input.Inbound
		err     error
	)
	if o.history != nil {
		loads <- struct{}{}
		// Not a child of s.ctx: a child leaves s.ctx a map of children
		// and a channel for as long as the session lives. suspend
		// cancels it instead (loadCancel).
		ctx, cancel := context.WithTimeout(context.Background(), o.cfg.LoadTimeout)
		s.mu.Lock()
		s.loadCancel = cancel
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			cancel()
		}
		st, err = o.history.Load(ctx, s.agent.profile.Name, s.name)
		if err == nil && o.dinput() != nil {
			s.mu.Lock()
			before, read := pendingBound(s.backlog)
			s.mu.Unlock()
			if read {
				pending, err = o.dinput().PendingBefore(ctx, s.agent.profile.Name, s.name, before)
			}
		}
		s.mu.Lock()
		s.loadCancel = nil
		s.mu.Unlock()
		cancel()
		<-loads
	}
	if err != nil {
		s.evicted.Store(true)
		o.forget(s)
		s.mu.Lock()
		backlog := s.backlog
		s.backlog = nil
		s.mu.Unlock()
		o.log.Warn("session not loaded", "agent", s.agent.profile.Name, "session", s.name, "err", err)
		for _, in := range backlog {
			in.Retry(fmt.Errorf("session %s of agent %s could not be loaded: %w", s.name, s.agent.profile.Name, err))
		}
		return
	}
	entries, summary := s.restore(st)
	if pol := s.serves().profile.Approval(); pol.Enabled() && s.gate == nil {
		s.gate = s.newGate()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tmpl := s.loopTemplate()
	own := s.own(entries)
	own.Summary = summary
	s.loop = tmpl.New(own)
	// A session suspended while it loaded (its partition released, its
	// lease lost) resumes nothing: its next owner does.
	for _, runID := range loop.Interrupted(entries, s.hasEnded) {
		if s.stopped != nil {
			break
		}
		o.log.Info("resuming run", "agent", s.agent.profile.Name, "session", s.name, "run_id", runID)
		s.loop.Resume(runID)
		s.resumed++
	}
	for _, in := range pending {
		s.stepLocked(in, true, true)
	}
	for _, in := range s.backlog {
		s.stepLocked(in, false, true)
	}
	s.backlog = nil
	s.loaded = true
}

// restore turns the stored records into the loop's history and the
// session's index of ids and runs, and returns the last summary stored.
// Records that do not decode are skipped, each with an error event naming
// its stream sequence.
func (s *session) restore(st *history.Loaded) ([]loop.Entry, *agentfleet.ContextSummary) {
	if st == nil {
		return nil, nil
	}
	var summary *agentfleet.ContextSummary
	o := s.o
	for _, sk := range st.Skipped {
		o.log.Error("history record skipped", "agent", s.agent.profile.Name, "session", s.name, "seq", sk.Seq, "err", sk.Err)
		o.pub.Emit(&agentfleet.Event{
			Type: agentfleet.EventError, Agent: s.agent.profile.Name, Session: s.name, Time: time.Now().UTC(),
			ErrorMessage: fmt.Sprintf("history record %d of session %s skipped: %v", sk.Seq, s.name, sk.Err),
		})
	}
	entries := make([]loop.Entry, 0, len(st.Records))
	var waits []history.Record    // approval requests and decisions
	var handoffs []history.Record // handoffs, in order
	results := map[string]bool{}
	for _, r := range st.Records {
		if r.Final != nil {
			s.run(r.RunID).setFinal(r.Final)
			continue
		}
		if r.Approval != nil || r.Decision != nil {
			waits = append(waits, r)
			continue
		}
		if r.Summary != nil {
			summary = r.Summary
			continue
		}
		if r.Handoff != nil {
			handoffs = append(handoffs, r)
			continue
		}
		if r.Forked != nil {
			s.model = r.Forked.Model
			continue
		}
		if k := r.Retained; k != nil {
			// A cut (retention): what the runs it dropped meant.
			summary = k.Summary
			if k.Handoff != nil {
				handoffs = append(handoffs, history.Record{RunID: r.RunID, Handoff: k.Handoff, Retained: k})
			}
			if k.Forked != nil {
				s.model = k.Forked.Model
			}
			continue
		}
		if r.Message == nil {
			continue
		}
		if tr, ok := r.Message.(*agentfleet.ToolResultMessage); ok {
			results[tr.ToolCallID] = true
		}
		if u, ok := r.Message.(*agentfleet.UserMessage); ok && u.Parent != nil {
			s.originLocked(r.RunID, u.Parent)
		}
		if u, ok := r.Message.(*agentfleet.UserMessage); ok && u.ID != "" {
			if m := s.msg(u.ID); m.run == "" {
				m.run = r.RunID
				s.run(r.RunID).ids = append(s.run(r.RunID).ids, u.ID)
			}
		}
		entries = append(entries, loop.Entry{RunID: r.RunID, Message: r.Message, Trace: r.Trace})
	}
	s.servingFrom(handoffs)
	// The calls of runs that go on, and that have no result yet, wait
	// again or act on their stored decision when their run resumes.
	for _, r := range waits {
		id := ""
		if r.Approval != nil {
			id = r.Approval.ToolCallID
		} else {
			id = r.Decision.ToolCallID
		}
		if !s.hasEnded(r.RunID) && !results[id] {
			s.gateLocked().Restore(r.RunID, r.Approval, r.Decision)
		}
	}
	s.writer = nil
	if o.history != nil {
		s.writer = o.history.Writer(s.agent.profile.Name, s.name, st.LastSeq, s.owner, s.fence)
		n, b, age := s.agent.profile.HistoryBounds()
		s.keeper = retention.NewKeeper(o.history, s.agent.profile.Name, s.name, retention.Bounds{MaxRecords: n, MaxBytes: b, MaxAge: age, Settled: 4 * o.durable.Config().AckWait}, st, o.log)
	}
	return entries, summary
}

// own is what the session's loop has of its own beside its agent's
// template (agent.template, made first): its name, store, sink and executor, the gate's
// hook when the agent's calls may need approval, and its history.
func (s *session) own(entries []loop.Entry) loop.Own {
	o := s.o
	own := loop.Own{
		Session:  s.name,
		Executor: delegating{s: s, next: o.payloads(fleetexec.Executor{Client: o.client, Fence: s.fence, Fenced: s.toolFenced})},
		Store:    loopStore{s},
		Sink:     loopSink{s},
		History:  entries,
	}
	if pol := s.serves().profile.Approval(); pol.Enabled() {
		// The orchestrator's own hook decides first: a call it blocks is
		// not put to a person.
		own.Before = pipeline.Chain(o.cfg.Before, s.gate.Hook)
	}
	return own
}

// window returns the context window of model by Config.ContextWindow, 0
// when unknown.
func (o *Orchestrator) window(model string) int {
	if o.cfg.ContextWindow == nil {
		return 0
	}
	return o.cfg.ContextWindow(model)
}

// stored records an appended message: which run took each user message, and
// the record in the history store when durable. It returns once the record
// is stored, retrying errors that can pass, or, when mustFlush allows, once
// it waits in the writer's buffer for the next record that is stored; an
// error means the session is no longer this orchestrator's to write.
func (s *session) stored(runID string, m agentfleet.Message) error {
	var sc trace.SpanContext
	if u, ok := m.(*agentfleet.UserMessage); ok && u.ID != "" {
		s.mu.Lock()
		info := s.msg(u.ID)
		if info.run == "" {
			info.run = runID
			r := s.run(runID)
			r.ids = append(r.ids, u.ID)
		}
		if info.trace != nil {
			sc = *info.trace
		}
		if u.Parent != nil {
			s.originLocked(runID, u.Parent)
		}
		s.mu.Unlock()
	}
	if s.writer == nil {
		return nil
	}
	// A user message keeps the trace context it came with, for a run
	// resumed elsewhere.
	var err error
	if mustFlush(m, s.rerunnable) || asksAgent(m, s.serves().asks) {
		_, err = s.writer.AppendTraced(s.ctx, runID, m, sc)
	} else {
		err = s.writer.Buffer(s.ctx, history.Record{RunID: runID, Message: m, Trace: sc})
	}
	if err != nil {
		return s.fenced(err)
	}
	return nil
}

// summarized stores a summary of the oldest part of the history.
func (s *session) summarized(runID string, sum *agentfleet.ContextSummary) error {
	if s.writer != nil {
		if _, err := s.writer.AppendSummary(s.ctx, runID, sum); err != nil {
			return s.fenced(err)
		}
	}
	return nil
}

// ended stores the end of a run, with the records that wait in the
// writer's buffer (the final message among them), before its answer goes
// out and its input is acknowledged.
func (s *session) ended(final *agentfleet.AssistantMessage) error {
	if s.writer != nil {
		if _, err := s.writer.AppendRunEnd(s.ctx, final.RunID, final); err != nil {
			return s.fenced(err)
		}
	}
	return nil
}

// answer settles every delivery waiting on a run that ended (its run.end
// is out) and publishes its final message.
func (s *session) answer(final *agentfleet.AssistantMessage) {
	s.mu.Lock()
	r := s.run(final.RunID)
	r.setFinal(final)
	if s.handedOver[final.RunID] {
		s.handoffEnded = true
	}
	var waiting []ticket
	for _, id := range r.ids {
		if m := s.msgs.Get(id); m != nil {
			waiting = append(waiting, m.tickets...)
			s.waiting -= len(m.tickets)
			m.tickets = nil
		}
	}
	s.mu.Unlock()
	s.o.pub.PublishOut(s.agent.profile.Name, s.name, final)
	st := inputpolicy.State{Leased: s.holds() == nil}
	for _, t := range waiting {
		d := delivery(t.in, false)
		d.Reply = d.Reply && !t.silent
		for _, a := range inputpolicy.Ended(st, d, final.RunID) {
			if a.Op == inputpolicy.Answer {
				t.in.Reply(final)
			} else {
				s.perform(t.in, a)
			}
		}
	}
}

// fenced reacts to a store that failed for good: another orchestrator wrote
// the session, or this one lost the lead or is stopping, or the session
// came into memory under a fence that never holds (outdated). The session is
// suspended and dropped from memory; if this orchestrator still serves, the
// deliveries waiting on it come back later and find the session as stored.
func (s *session) fenced(err error) error {
	if errors.Is(err, history.ErrFenced) && (s.holds() == nil || s.outdated(s.o.partitions())) && context.Cause(s.ctx) == nil {
		s.o.log.Warn("session fenced (written by another orchestrator, or under a fence that never holds): dropped to be loaded again", "agent", s.agent.profile.Name, "session", s.name, "err", err)
		s.o.forget(s)
		go s.suspend(err, inputpolicy.RetryLater)
	}
	return err
}

// suspended is the loop's word that a run stopped without ending.
func (s *session) suspended(runID string, err error) {
	s.o.log.Info("run suspended", "agent", s.agent.profile.Name, "session", s.name, "run_id", runID, "err", err)
}

// suspend stops the session for good: its active run stops without ending,
// no store of it goes on, and the deliveries waiting on it are left for the
// next owner as mode says.
func (s *session) suspend(why error, mode inputpolicy.Mode) {
	if mode == inputpolicy.HandOver {
		s.keep()
	}
	s.cancel(why)
	s.mu.Lock()
	if s.stopped == nil {
		s.stopped = why
	}
	if s.loadCancel != nil {
		s.loadCancel()
	}
	l := s.loop
	var waiting []*input.Inbound
	for m := range s.msgs.Values() {
		for _, t := range m.tickets {
			waiting = append(waiting, t.in)
		}
		m.tickets = nil
	}
	s.waiting = 0
	waiting = append(waiting, s.backlog...)
	s.backlog = nil
	s.mu.Unlock()
	if l != nil {
		l.Suspend(why)
	}
	for _, in := range waiting {
		for _, a := range inputpolicy.Suspended(delivery(in, false), mode, bus.Temporary(why)) {
			s.perform(in, a)
		}
	}
}

// handoverFlush bounds the store of what waits in a session's history
// writer when the session is handed over.
const handoverFlush = 2 * time.Second

// keep stores what waits in the session's history writer before the session
// is handed over while this orchestrator still may write it, so that the
// next owner resumes the run from there instead of making it again. It
// stores nothing past the shutdown grace, nor once the fence no longer
// holds (the writer's own check); a flush that fails leaves the run to be
// made again from its input, as after a crash.
func (s *session) keep() {
	s.mu.Lock()
	w := s.writer // set by load before loaded
	loaded := s.loaded
	s.mu.Unlock()
	if !loaded || w == nil || w.Buffered() == 0 || s.holds() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, handoverFlush)
	defer cancel()
	if _, err := w.Flush(ctx); err != nil {
		s.o.log.Info("records of a session handed over not stored: its run is made again", "agent", s.agent.profile.Name, "session", s.name, "err", err)
	}
}

// wait waits until the session's loop has no run, or ctx ends; nil at once
// when the session has no loop yet. The loop is read under the session's
// lock: load sets it while a partition release or a close may be waiting.
func (s *session) wait(ctx context.Context) error {
	s.mu.Lock()
	l := s.loop
	s.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.Wait(ctx)
}

// idleLocked reports whether the session may leave memory: loaded, no
// run, no input waiting, idle for longer than d.
func (s *session) idleLocked(d time.Duration) bool {
	if !s.loaded || s.waiting > 0 || len(s.backlog) > 0 {
		return false
	}
	since, ok := s.loop.IdleSince()
	return ok && time.Since(since) > d
}
