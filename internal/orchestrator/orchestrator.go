// Package orchestrator runs agent sessions for the fleet: it takes user
// input from the client subjects, runs each session's agent loop, executes
// tool calls on the workers through the bus, and publishes events and final
// messages.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/google/uuid"
)

// Config configures an Orchestrator. Model is required; every other field is
// optional and its zero value means the documented default.
type Config struct {
	// Prefix of every subject; default bus.DefaultPrefix.
	Prefix string
	// Profiles are the agents; default one DefaultProfile.
	Profiles []Profile
	// Model answers every agent, unless ModelFor gives one for a profile.
	Model    loop.Model
	ModelFor func(p *Profile) loop.Model
	// ModelName is the model of profiles that name none.
	ModelName string
	// LocalTools are served by the orchestrator itself to every agent that
	// allows them (list_tools always is).
	LocalTools []*agentfleet.Tool
	// Discovery configures the fleet watcher.
	Discovery bus.FleetConfig
	// Tools configures the tool client.
	Tools bus.ClientConfig
	// Before and After are tool call hooks applied to every agent.
	Before pipeline.BeforeHook
	After  pipeline.AfterHook
	Logger *slog.Logger
	// Observer, if set, receives the orchestrator's measurements.
	Observer Observer
	// Durable turns on JetStream: input through a durable consumer, session
	// histories stored, recent events kept. Start fails if the server has
	// no JetStream.
	Durable       bool
	DurableConfig bus.DurableConfig
	// DurableOptional lets Start go on without durability, with a warning,
	// when the server has no JetStream.
	DurableOptional bool
	// SessionIdle is how long a session stays in memory after its last run
	// when durable; it is loaded again on its next message. Default 10m.
	SessionIdle time.Duration
	// Elect makes orchestrators of one prefix elect an active one (durable
	// only): the others stand by and take over when it stops (at once) or
	// dies (after LeaderTTL, default 10s), so that no session ever runs on
	// two orchestrators. OnLostLead, if set, is called when this one loses
	// the lead it held; it has stopped taking input by then.
	Elect      bool
	LeaderTTL  time.Duration
	OnLostLead func()
}

// Observer receives measurements, for metrics. Every method may be called
// from many goroutines at once. An Observer that also has a method
// EventPublished(agentfleet.EventType) is told of every event published,
// those about rejected input included.
type Observer interface {
	Event(e *agentfleet.Event)
	Input(outcome string)
	ToolAttempt(tool, outcome string)
}

// Orchestrator serves the agents of its profiles on one NATS connection.
type Orchestrator struct {
	nc       *bus.Conn
	cfg      Config
	subjects bus.Subjects
	log      *slog.Logger
	pub      *bus.Publisher
	client   *bus.ToolClient
	fleet    *bus.Fleet
	input    *bus.Input
	durable  *bus.Durable
	dinput   *bus.DurableInput
	agents   map[string]*agent
	sweep    chan struct{}
	swept    chan struct{}

	closeOnce sync.Once
	closeErr  error

	lead    *bus.Leadership
	leading bool
	runCtx  context.Context
	stopRun context.CancelFunc
	standby chan struct{} // closed when a standby's wait for the lead ends

	// evictMu keeps eviction out while input is handed to a session, so
	// that no message goes to a session object that was just dropped.
	evictMu sync.RWMutex

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
	stopping bool // past the shutdown grace: store nothing, settle nothing
}

// session is a loop session with what the orchestrator knows of its stored
// input: which run took each message id, and which runs ended.
type session struct {
	*loop.Session
	agent, name string
	mu          sync.Mutex
	runOf       map[string]string
	seqOf       map[string]uint64 // stream sequence of the message that took each id
	ended       map[string]bool
	storeFailed map[string]bool
}

// agent is one profile with its own tool store (spec section 4: per-agent
// isolation).
type agent struct {
	profile Profile
	store   *tools.Store
	model   loop.Model
	mu      sync.Mutex
	remote  map[string]agentfleet.ToolDef // fleet tools in store
}

// New checks cfg and prepares an orchestrator on nc; Start begins serving.
func New(nc *bus.Conn, cfg Config) (*Orchestrator, error) {
	if cfg.Model == nil && cfg.ModelFor == nil {
		return nil, errors.New("orchestrator: no model configured")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.Profiles) == 0 {
		cfg.Profiles = []Profile{DefaultProfile()}
	}
	profiles, err := checkProfiles(slices.Clone(cfg.Profiles))
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	subjects, err := bus.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	o := &Orchestrator{
		nc: nc, cfg: cfg, subjects: subjects, log: cfg.Logger,
		agents: map[string]*agent{}, sessions: map[string]*session{},
	}
	for _, p := range profiles {
		a := &agent{profile: p, remote: map[string]agentfleet.ToolDef{}, model: cfg.Model}
		if cfg.ModelFor != nil {
			if m := cfg.ModelFor(&a.profile); m != nil {
				a.model = m
			}
		}
		if a.profile.Model == "" {
			a.profile.Model = cfg.ModelName
		}
		a.store = tools.NewStore(p.Name)
		for _, t := range cfg.LocalTools {
			if p.Allows(t.Name) {
				if err := a.store.Register(t); err != nil {
					return nil, fmt.Errorf("orchestrator: agent %q: %w", p.Name, err)
				}
			}
		}
		if err := a.store.Register(tools.ListTool(a.store)); err != nil {
			return nil, fmt.Errorf("orchestrator: agent %q: %w", p.Name, err)
		}
		o.agents[p.Name] = a
	}
	o.pub = bus.NewPublisher(nc, subjects, cfg.Logger)
	if p, ok := cfg.Observer.(interface{ EventPublished(agentfleet.EventType) }); ok {
		o.pub.OnPublish = p.EventPublished
	}
	return o, nil
}

// Start connects the tool client, discovers the fleet and subscribes the
// client subjects.
func (o *Orchestrator) Start(ctx context.Context) error {
	var err error
	tc := o.cfg.Tools
	tc.Prefix = o.subjects.Prefix
	if o.cfg.Observer != nil {
		tc.Observe = func(tool, outcome, _ string) { o.cfg.Observer.ToolAttempt(tool, outcome) }
	}
	if o.client, err = bus.NewToolClient(o.nc, tc); err != nil {
		return fmt.Errorf("orchestrator: %w", err)
	}
	dc := o.cfg.Discovery
	dc.Logger = o.log
	dc.OnChange = o.updateTools
	if o.fleet, err = bus.WatchFleet(ctx, o.nc, o.subjects, dc); err != nil {
		return errors.Join(fmt.Errorf("orchestrator: %w", err), o.client.Close())
	}
	o.input = bus.NewInput(o.nc, o.subjects, bus.InputHandlerFunc(o.HandleInput), o.pub, o.log)
	if o.cfg.Observer != nil {
		o.input.OnInput = o.cfg.Observer.Input
	}
	if o.cfg.Durable {
		o.durable, err = bus.OpenDurable(ctx, o.nc, o.subjects, o.cfg.DurableConfig)
		if errors.Is(err, bus.ErrNoJetStream) && o.cfg.DurableOptional {
			o.log.Warn("the NATS server has no JetStream: input is not durable and sessions are kept in memory only", "err", err)
			o.durable, o.cfg.Durable = nil, false
		} else if err != nil {
			return errors.Join(fmt.Errorf("orchestrator: %w", err), o.fleet.Close(), o.client.Close())
		}
	}
	o.runCtx, o.stopRun = context.WithCancel(context.Background())
	if o.durable != nil && o.cfg.Elect {
		id := uuid.NewString()
		if o.lead, err = o.durable.NewLeadership(ctx, o.subjects, id, o.cfg.LeaderTTL, o.log); err != nil {
			return errors.Join(fmt.Errorf("orchestrator: %w", err), o.fleet.Close(), o.client.Close())
		}
		ok, holder, err := o.lead.TryAcquire(ctx)
		if err != nil {
			return errors.Join(fmt.Errorf("orchestrator: %w", err), o.fleet.Close(), o.client.Close())
		}
		if !ok {
			// Stand by: serve once the active orchestrator is gone.
			o.log.Info("orchestrator standing by", "leader", holder)
			o.standby = make(chan struct{})
			go func() {
				defer close(o.standby)
				if o.lead.Acquire(o.runCtx) != nil {
					return
				}
				if err := o.serve(o.runCtx); err != nil {
					o.log.Error("taking over", "err", err)
				}
			}()
			return nil
		}
	}
	if err := o.serve(ctx); err != nil {
		return errors.Join(fmt.Errorf("orchestrator: %w", err), o.fleet.Close(), o.client.Close())
	}
	return nil
}

// serve takes input: the durable consumer and the core subscriptions. With
// leadership, it also watches for the lead being lost.
func (o *Orchestrator) serve(ctx context.Context) error {
	if o.durable != nil {
		if err := o.startDurable(ctx); err != nil {
			return err
		}
	}
	if err := o.input.Start(); err != nil {
		return err
	}
	o.mu.Lock()
	o.leading = true
	o.mu.Unlock()
	if o.lead != nil {
		go func() {
			select {
			case <-o.lead.Lost():
				o.log.Error("this orchestrator lost the lead; it stops taking input")
				o.stopInput()
				if o.cfg.OnLostLead != nil {
					o.cfg.OnLostLead()
				}
			case <-o.runCtx.Done():
			}
		}()
	}
	o.log.Info("orchestrator serving", "prefix", o.subjects.Prefix, "durable", o.durable != nil, "agents", slices.Sorted(maps.Keys(o.agents)), "tools", len(o.fleet.Tools()), "workers", o.fleet.Workers())
	return nil
}

// Leading reports whether this orchestrator takes input (it is the active
// one, or leadership is off).
func (o *Orchestrator) Leading() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.leading
}

func (o *Orchestrator) stopInput() error {
	o.mu.Lock()
	o.leading = false
	d := o.dinput
	o.dinput = nil
	o.mu.Unlock()
	if d != nil {
		d.Stop()
	}
	if o.input != nil {
		return o.input.Stop()
	}
	return nil
}

// Ready reports whether the orchestrator serves: connected to NATS, with
// the fleet discovered.
func (o *Orchestrator) Ready() bool {
	return o.nc.IsConnected() && o.fleet != nil
}

// Fleet returns the fleet watcher (after Start).
func (o *Orchestrator) Fleet() *bus.Fleet { return o.fleet }

// Publisher returns the event publisher.
func (o *Orchestrator) Publisher() *bus.Publisher { return o.pub }

// Tools returns the tools agent sees, in order.
func (o *Orchestrator) Tools(agentName string) ([]agentfleet.ToolDef, bool) {
	a, ok := o.agents[agentName]
	if !ok {
		return nil, false
	}
	return a.store.Defs(), true
}

// WaitTool waits until the fleet serves the tool name to every agent whose
// profile allows it (present), or to none (!present), or ctx ends.
func (o *Orchestrator) WaitTool(ctx context.Context, name string, present bool) error {
	for {
		done := true
		for _, a := range o.agents {
			if !a.profile.Allows(name) {
				continue
			}
			if _, ok := a.store.Get(name); ok != present {
				done = false
			}
		}
		if done {
			return nil
		}
		if o.fleet != nil {
			if err := o.fleet.Refresh(ctx); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// updateTools brings every agent's store in line with the fleet: tools that
// appeared are added where the profile allows them, tools that changed are
// replaced, tools no worker serves any more are removed. Local tools stay.
func (o *Orchestrator) updateTools(defs []agentfleet.ToolDef) {
	byName := map[string]agentfleet.ToolDef{}
	for _, d := range defs {
		byName[d.Name] = d
	}
	for _, a := range o.agents {
		a.mu.Lock()
		for name, old := range a.remote {
			if d, ok := byName[name]; !ok || !sameDef(d, old) {
				a.store.Remove(name)
				delete(a.remote, name)
			}
		}
		for _, d := range defs {
			if _, ok := a.remote[d.Name]; ok || !a.profile.Allows(d.Name) {
				continue
			}
			if _, local := a.store.Get(d.Name); local {
				continue // an orchestrator tool of the same name wins
			}
			if err := a.store.Register(&agentfleet.Tool{ToolDef: d}); err != nil {
				o.log.Warn("fleet tool rejected", "agent", a.profile.Name, "tool", d.Name, "err", err)
				continue
			}
			a.remote[d.Name] = d
		}
		a.mu.Unlock()
	}
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	o.log.Info("fleet tools changed", "tools", strings.Join(names, ","))
}

func sameDef(a, b agentfleet.ToolDef) bool {
	return a.Name == b.Name && a.Label == b.Label && a.Description == b.Description &&
		string(a.InputSchema) == string(b.InputSchema) && string(a.OutputSchema) == string(b.OutputSchema) &&
		a.Annotations == b.Annotations && a.Parallel == b.Parallel && a.TimeoutMS == b.TimeoutMS && a.Scripted == b.Scripted
}

// Session returns the session of agentName, creating it on first use (and,
// when durable, loading its stored history).
func (o *Orchestrator) Session(agentName, session string) (*loop.Session, error) {
	s, err := o.session(agentName, session)
	if err != nil {
		return nil, err
	}
	return s.Session, nil
}

func (o *Orchestrator) session(agentName, name string) (*session, error) {
	a, ok := o.agents[agentName]
	if !ok {
		return nil, fmt.Errorf("unknown agent %q (agents: %s)", agentName, strings.Join(slices.Sorted(maps.Keys(o.agents)), ", "))
	}
	if err := bus.CheckToken("session", name); err != nil {
		return nil, err
	}
	key := agentName + "." + name
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, errors.New("orchestrator is shutting down")
	}
	if s, ok := o.sessions[key]; ok {
		return s, nil
	}
	sess := &session{agent: agentName, name: name, runOf: map[string]string{}, seqOf: map[string]uint64{}, ended: map[string]bool{}, storeFailed: map[string]bool{}}
	var history []agentfleet.Message
	if o.durable != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		stored, err := o.durable.History.Load(ctx, agentName, name)
		cancel()
		if err != nil {
			return nil, err
		}
		history, sess.runOf, sess.ended = stored.Messages, stored.RunOf, stored.Ended
	}
	p := &a.profile
	sess.Session = loop.New(loop.Config{
		Agent: agentName, Session: name, Model: a.model, ModelName: p.Model,
		SystemPrompt: p.SystemPrompt, Tools: a.store, MaxTurns: p.MaxTurns,
		Pipeline: pipeline.Config{
			Mode: pipeline.Mode(p.Mode), MaxParallel: p.MaxParallel, DefaultTimeout: p.toolTimeout,
			Executor: o.client, Before: o.cfg.Before, After: o.cfg.After,
		},
		Sink:     o.sink(),
		History:  history,
		OnAppend: func(runID string, m agentfleet.Message) { o.stored(sess, runID, m) },
		OnRunEnd: func(final *agentfleet.AssistantMessage) { o.runEnded(sess, final) },
	})
	o.sessions[key] = sess
	return sess, nil
}

// stored records an appended message: in memory, and in the history store
// when durable. A failed store marks the run so its input is not acked.
func (o *Orchestrator) stored(s *session, runID string, m agentfleet.Message) {
	if o.durable == nil || o.isStopping() {
		return // without a store there is nothing to de-duplicate against
	}
	if u, ok := m.(*agentfleet.UserMessage); ok && u.ID != "" {
		s.mu.Lock()
		s.runOf[u.ID] = runID
		s.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.durable.History.Append(ctx, s.agent, s.name, runID, m); err != nil {
		o.log.Error("store message", "session", s.name, "run_id", runID, "err", err)
		s.mu.Lock()
		s.storeFailed[runID] = true
		s.mu.Unlock()
	}
}

// runEnded stores the end of a run and publishes its final message.
func (o *Orchestrator) runEnded(s *session, final *agentfleet.AssistantMessage) {
	if o.isStopping() {
		return // the run was cut short by shutdown: it resumes elsewhere
	}
	if o.durable != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := o.durable.History.AppendRunEnd(ctx, s.agent, s.name, final.RunID, final)
		cancel()
		if err != nil {
			o.log.Error("store end of run", "session", s.name, "run_id", final.RunID, "err", err)
			s.mu.Lock()
			s.storeFailed[final.RunID] = true
			s.mu.Unlock()
		}
	}
	if o.durable != nil {
		s.mu.Lock()
		s.ended[final.RunID] = true
		s.mu.Unlock()
	}
	o.pub.PublishOut(s.agent, s.name, final)
}

// settled reports whether the input of run runID may be acknowledged.
func (o *Orchestrator) settled(s *session, runID string) bool {
	if o.isStopping() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[runID] && !s.storeFailed[runID]
}

func (o *Orchestrator) isStopping() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stopping
}

// sink publishes events, counts them and logs them: every event at debug
// level, failures at warn, with the run, session and tool call as
// attributes.
func (o *Orchestrator) sink() agentfleet.EventSink {
	return agentfleet.EventSinkFunc(func(e *agentfleet.Event) {
		if o.cfg.Observer != nil {
			o.cfg.Observer.Event(e)
		}
		o.pub.Emit(e)
		o.logEvent(e)
	})
}

func (o *Orchestrator) logEvent(e *agentfleet.Event) {
	level := slog.LevelDebug
	switch {
	case e.Type == agentfleet.EventError, e.Type == agentfleet.EventToolEnd && e.IsError:
		level = slog.LevelWarn
	case e.Type == agentfleet.EventRunEnd:
		level = slog.LevelInfo
	}
	ctx := context.Background()
	if !o.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("agent", e.Agent), slog.String("session", e.Session), slog.String("run_id", e.RunID), slog.Int("turn", e.Turn)}
	if e.ToolCallID != "" {
		attrs = append(attrs, slog.String("tool_call_id", e.ToolCallID), slog.String("tool", e.ToolName))
	}
	switch e.Type {
	case agentfleet.EventToolEnd:
		attrs = append(attrs, slog.Float64("duration_ms", e.DurationMS), slog.String("worker", e.Worker))
		if e.IsError && e.Result != nil {
			attrs = append(attrs, slog.String("error", agentfleet.JoinText(e.Result.Content)))
		}
	case agentfleet.EventRunEnd:
		attrs = append(attrs, slog.String("stop_reason", string(e.StopReason)))
		if e.Message != nil && e.Message.ErrorMessage != "" {
			attrs = append(attrs, slog.String("error", e.Message.ErrorMessage))
		}
	case agentfleet.EventError:
		attrs = append(attrs, slog.String("error", e.ErrorMessage))
	}
	o.log.LogAttrs(ctx, level, string(e.Type), attrs...)
}

// Sessions returns the number of sessions in memory.
func (o *Orchestrator) Sessions() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.sessions)
}

// HandleInput takes one message from a client subject. It never blocks on a
// run: ask replies are sent, and durable input settled, when the run ends.
func (o *Orchestrator) HandleInput(in *bus.Inbound) error {
	o.evictMu.RLock()
	defer o.evictMu.RUnlock()
	s, err := o.session(in.Agent, in.Session)
	if err != nil {
		return err
	}
	if in.Kind == bus.KindAbort {
		if !s.Abort(in.Reason) {
			return fmt.Errorf("session %s of agent %s has no active run to abort", in.Session, in.Agent)
		}
		return nil
	}
	var reply <-chan *agentfleet.AssistantMessage
	if id := in.Message.ID; id != "" {
		s.mu.Lock()
		runID, seen := s.runOf[id]
		ended := s.ended[runID]
		same := in.Seq != 0 && s.seqOf[id] == in.Seq
		s.mu.Unlock()
		switch {
		case seen && ended:
			return bus.ErrDuplicate
		case seen && (runID == "" || s.Running()) && same:
			return bus.ErrInProgress // redelivered while queued or running
		case seen && (runID == "" || s.Running()):
			return bus.ErrDuplicate // another copy of a message being handled
		case seen:
			// Taken by a run that never ended: the process stopped during
			// it. The message is in the history; the run goes on.
			o.log.Info("resuming run", "session", in.Session, "run_id", runID, "message_id", id)
			s.mu.Lock()
			s.seqOf[id] = in.Seq
			s.mu.Unlock()
			reply = s.Resume(runID, in.Message)
		}
	}
	if reply == nil {
		if id := in.Message.ID; id != "" && o.durable != nil {
			s.mu.Lock()
			s.runOf[id] = "" // queued; the run that takes it fills this in
			s.seqOf[id] = in.Seq
			s.mu.Unlock()
		}
		switch in.Kind {
		case bus.KindIn, bus.KindAsk:
			reply = s.Send(in.Message)
		case bus.KindSteer:
			reply = s.Steer(in.Message)
		default:
			return fmt.Errorf("unknown input kind %q", in.Kind)
		}
	}
	if in.Kind == bus.KindAsk || in.Durable() {
		go func() {
			final := <-reply
			in.Reply(final)
			in.Done(o.settled(s, final.RunID))
		}()
	}
	return nil
}

// Close stops taking input and waits for active runs to end. Runs still
// active when ctx ends are abandoned at a safe point: nothing more of them is
// stored or acknowledged, so that a restart (or another orchestrator)
// resumes them from their stored history.
func (o *Orchestrator) Close(ctx context.Context) error {
	o.closeOnce.Do(func() { o.closeErr = o.close(ctx) })
	return o.closeErr
}

func (o *Orchestrator) close(ctx context.Context) error {
	var errs []error
	if o.stopRun != nil {
		o.stopRun()
		if o.standby != nil {
			<-o.standby // a standby that was taking over has finished
		}
	}
	errs = append(errs, o.stopInput())
	if o.sweep != nil {
		close(o.sweep)
		<-o.swept
		o.sweep = nil
	}
	o.mu.Lock()
	o.closed = true
	sessions := slices.Collect(maps.Values(o.sessions))
	o.mu.Unlock()
	for _, s := range sessions {
		if err := s.Wait(ctx); err != nil {
			o.mu.Lock()
			o.stopping = true
			o.mu.Unlock()
			break
		}
	}
	if o.isStopping() {
		for _, s := range sessions {
			s.Abort("orchestrator shutting down")
		}
		for _, s := range sessions {
			wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, s.Wait(wctx))
			cancel()
		}
	}
	if o.lead != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, o.lead.Release(rctx))
		cancel()
	}
	if o.fleet != nil {
		errs = append(errs, o.fleet.Close())
	}
	if o.client != nil {
		errs = append(errs, o.client.Close())
	}
	return errors.Join(errs...)
}

// startDurable opens the streams, takes in and steer from the durable
// consumer, and starts evicting idle sessions.
func (o *Orchestrator) startDurable(ctx context.Context) error {
	o.input.Kinds = []string{bus.KindAsk, bus.KindAbort}
	d, err := o.durable.Input(ctx, o.input)
	if err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	o.mu.Lock()
	o.dinput = d
	o.mu.Unlock()
	idle := o.cfg.SessionIdle
	if idle <= 0 {
		idle = 10 * time.Minute
	}
	o.sweep, o.swept = make(chan struct{}), make(chan struct{})
	go o.evict(idle)
	return nil
}

// evict drops sessions idle for longer than idle from memory; their history
// is in the store and is loaded again on their next message.
func (o *Orchestrator) evict(idle time.Duration) {
	defer close(o.swept)
	t := time.NewTicker(max(idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-o.sweep:
			return
		case <-t.C:
		}
		o.evictMu.Lock()
		o.mu.Lock()
		for key, s := range o.sessions {
			if since, ok := s.IdleSince(); ok && time.Since(since) > idle {
				delete(o.sessions, key)
			}
		}
		o.mu.Unlock()
		o.evictMu.Unlock()
	}
}
