package scriptfleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/script/procmem"
	"github.com/agentfleet/agentfleet/internal/scripts"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

// ServerConfig configures a Server; every field is optional and
// its zero value means the documented default.
type ServerConfig struct {
	// Name is the micro service name; default "toolworker-scripts".
	Name string
	// Outcomes, if set, records the outcomes of calls of scripted tools
	// that are not idempotent (toolrpc.ServerConfig.Outcomes).
	Outcomes *toolrpc.Outcomes
	// Version is the service's SemVer version; default "0.1.0".
	Version string
	// Prefix is the subject prefix; default bus.DefaultPrefix.
	Prefix string
	// Concurrency, Heartbeat and Observe are those of ServerConfig.
	Concurrency int
	Heartbeat   time.Duration
	Observe     func(tool, outcome string, d time.Duration)
	// Tracer is that of ServerConfig: each call a span.
	Tracer trace.Tracer
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Store configures the bucket of the scripted tools.
	Store StoreConfig
	// Env gives the scripts' limits and clock. When its CallTool is nil,
	// call_tool calls the fleet through a bus.ToolClient on the server's
	// connection (see scripts.FleetCaller).
	Env script.Env
	// Client configures that bus.ToolClient; its Prefix is always Prefix.
	Client toolrpc.ClientConfig
	// Reserved names are never served as scripts, typically the tools
	// this process serves itself: the same subject in the same queue
	// group would split their calls between the two.
	Reserved []string
	// DrainTimeout bounds how long a replaced set of tools may finish its
	// calls in flight before they are canceled; default 10s.
	DrainTimeout time.Duration
	// Isolation says where scripts run: scripts.IsolationNone (default) in this
	// process, scripts.IsolationProcess each check, call and dry run in a child
	// process of this executable, which may map ChildAddressSpace bytes
	// (default scripts.DefaultChildAddressSpace) beyond what it mapped at its
	// start, and dies alone when it needs more. Linux only. The executable
	// must call RunChildIfRequested first thing in main.
	Isolation         string
	ChildAddressSpace uint64
	// Memory is the memory budget shared by the script calls of this
	// process: every call, check and dry run reserves its own budget
	// (Env.MaxMemory) from it while it runs. A call that finds no room is
	// refused as busy, so that the orchestrator sends it to another worker
	// or again a moment later; checks and dry runs wait for room. Give
	// every Server of one process the same one. Default: a budget of
	// procmem.DefaultProcessMemory for this server alone.
	Memory *procmem.ProcessMemory
	// OnChange, if set, is called after every change of the tools served,
	// with their names and revisions, once the new set takes calls and the
	// replaced one takes no more.
	OnChange func(served map[string]uint64)
}

// Server serves the scripted tools of the fleet's bucket as
// endpoints of a micro service, the same protocol as Serve, and keeps them
// in line with the bucket: a tool written, replaced or deleted is served,
// changed or dropped within moments.
//
// micro cannot remove one endpoint from a running service, so every change
// starts a new bus.ToolServer with the new set and then drains the old one: the
// new set takes calls before the old one stops, and the old one's calls in
// flight may finish. Both announce themselves on the fleet subject (joined,
// then left), so that orchestrators rediscover at once.
type Server struct {
	nc       *nats.Conn
	cfg      ServerConfig
	subjects bus.Subjects
	store    *Store
	client   *toolrpc.ToolClient // nil when cfg.Env.CallTool was given
	env      script.Env
	runner   *scripts.ProcessRunner // nil without process isolation
	memory   *procmem.ProcessMemory
	perCall  int64 // what a call reserves from memory
	log      *slog.Logger
	reserved map[string]bool

	stop context.CancelFunc
	done chan struct{}

	dryRunSub  *nats.Subscription
	dryRuns    sync.WaitGroup
	stopDryRun context.CancelFunc

	mu       sync.Mutex
	current  *toolrpc.ToolServer
	served   map[string]uint64
	built    map[string]builtTool
	draining sync.WaitGroup
}

// builtTool is a definition turned into a tool, nil when it was rejected.
type builtTool struct {
	revision uint64
	tool     *agentfleet.Tool
}

// Serve binds (or creates) the bucket, serves the scripted tools it
// holds, and keeps watching it until Close. ctx bounds the start only: it
// returns once the tools stored at the start are served. Definitions that
// do not pass script.Check are logged and not served.
func Serve(ctx context.Context, nc *nats.Conn, cfg ServerConfig) (*Server, error) {
	if cfg.Name == "" {
		cfg.Name = "toolworker-scripts"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 10 * time.Second
	}
	subjects, err := bus.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("script server: %w", err)
	}
	store, err := NewStore(ctx, nc, cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("script server: %w", err)
	}
	s := &Server{
		nc: nc, cfg: cfg, subjects: subjects, store: store, env: cfg.Env, log: cfg.Logger,
		reserved: map[string]bool{}, done: make(chan struct{}),
		served: map[string]uint64{}, built: map[string]builtTool{},
	}
	for _, n := range cfg.Reserved {
		s.reserved[n] = true
	}
	s.memory, s.perCall = cfg.Memory, s.env.MaxMemory
	if s.memory == nil {
		s.memory = procmem.NewProcessMemory(0)
	}
	if s.perCall <= 0 {
		s.perCall = script.DefaultMaxMemory
	}
	if err := s.memory.CheckFits(s.perCall); err != nil {
		return nil, fmt.Errorf("script server: %w", err)
	}
	if s.env.CallTool == nil {
		cc := cfg.Client
		cc.Prefix = subjects.Prefix
		if s.client, err = toolrpc.NewToolClient(nc, cc); err != nil {
			return nil, fmt.Errorf("script server: %w", err)
		}
		s.env.CallTool = scripts.FleetCaller(s.client, 0)
	}
	switch cfg.Isolation {
	case scripts.IsolationNone, "none":
	case scripts.IsolationProcess:
		if s.runner, err = scripts.NewProcessRunner(s.env, cfg.ChildAddressSpace); err != nil {
			return nil, errors.Join(fmt.Errorf("script server: %w", err), s.closeClient())
		}
	default:
		return nil, errors.Join(fmt.Errorf("script server: isolation %q: want %q or %q", cfg.Isolation, "none", scripts.IsolationProcess), s.closeClient())
	}
	wctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	updates, err := store.Watch(wctx)
	if err != nil {
		stop()
		return nil, errors.Join(fmt.Errorf("script server: %w", err), s.closeClient())
	}
	state := map[string]*script.Definition{}
	for synced := false; !synced; {
		select {
		case <-ctx.Done():
			stop()
			return nil, errors.Join(fmt.Errorf("script server: reading the bucket: %w", ctx.Err()), s.closeClient())
		case u, ok := <-updates:
			if !ok {
				stop()
				return nil, errors.Join(errors.New("script server: the bucket's watcher stopped"), s.closeClient())
			}
			synced = s.note(state, u)
		}
	}
	s.apply(state)
	dctx, stopDryRun := context.WithCancel(context.Background())
	s.stopDryRun = stopDryRun
	if err := s.serveDryRuns(dctx); err != nil {
		stop()
		stopDryRun()
		return nil, errors.Join(err, s.closeClient())
	}
	go s.watch(updates, state)
	return s, nil
}

// note applies one update to state and reports whether it is the end of
// the initial values.
func (s *Server) note(state map[string]*script.Definition, u Update) (synced bool) {
	switch {
	case u.Synced:
		return true
	case u.Err != nil:
		s.log.Warn("scripted tool ignored", "tool", u.Name, "revision", u.Revision, "err", u.Err)
		delete(state, u.Name)
	case u.Definition == nil:
		delete(state, u.Name)
	default:
		state[u.Name] = u.Definition
	}
	return false
}

func (s *Server) watch(updates <-chan Update, state map[string]*script.Definition) {
	defer close(s.done)
	for u := range updates {
		s.note(state, u)
		// Take a burst of changes as one.
	more:
		for {
			select {
			case u, ok := <-updates:
				if !ok {
					break more
				}
				s.note(state, u)
			default:
				break more
			}
		}
		s.apply(state)
	}
}

// apply serves the tools of state, if they differ from those served.
func (s *Server) apply(state map[string]*script.Definition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tools []*agentfleet.Tool
	served := map[string]uint64{}
	for _, name := range slices.Sorted(maps.Keys(state)) {
		def := state[name]
		if s.reserved[name] {
			if b, ok := s.built[name]; !ok || b.revision != def.Revision {
				s.log.Warn("scripted tool not served: this worker serves a tool of that name itself", "tool", name, "revision", def.Revision)
				s.built[name] = builtTool{revision: def.Revision}
			}
			continue
		}
		b, ok := s.built[name]
		if !ok || b.revision != def.Revision {
			b = builtTool{revision: def.Revision, tool: s.build(def)}
			s.built[name] = b
		}
		if b.tool != nil {
			tools = append(tools, b.tool)
			served[name] = def.Revision
		}
	}
	for name := range s.built {
		if state[name] == nil {
			delete(s.built, name)
		}
	}
	if maps.Equal(served, s.served) {
		return
	}
	var next *toolrpc.ToolServer
	if len(tools) > 0 {
		var err error
		next, err = toolrpc.Serve(s.nc, toolrpc.ServerConfig{
			Name: s.cfg.Name, Version: s.cfg.Version, Prefix: s.subjects.Prefix, Tools: tools,
			Concurrency: s.concurrency(), Heartbeat: s.cfg.Heartbeat, Logger: s.log, Observe: s.cfg.Observe,
			Tracer: s.cfg.Tracer, Kind: fleet.KindScripted, Admit: s.admit, Outcomes: s.cfg.Outcomes,
		})
		if err != nil {
			s.log.Error("serving scripted tools", "err", err)
			return
		}
	}
	old := s.current
	s.current, s.served = next, served
	if old != nil {
		stopped := s.awaitLeft(old.ID())
		s.draining.Add(1)
		go func() {
			defer s.draining.Done()
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
			defer cancel()
			if err := old.Drain(ctx); err != nil {
				s.log.Warn("draining replaced scripted tools", "worker", old.Name(), "err", err)
			}
		}()
		stopped()
	}
	// One line per worker that serves scripts: several in one process
	// (orchestrator --workers 2) would otherwise log lines alike.
	worker := ""
	if next != nil {
		worker = next.Name()
	}
	s.log.Info("scripted tools served", "worker", worker, "tools", slices.Sorted(maps.Keys(served)))
	if s.cfg.OnChange != nil {
		s.cfg.OnChange(maps.Clone(served))
	}
}

// awaitLeft returns a function that waits (two seconds at most) until the
// bus.ToolServer id announces that it left the fleet. The announcement follows
// the service's unsubscriptions on the same connection, so once it is here
// no new call reaches that server: the replaced tools take no more calls,
// while those in flight finish in the background. A connection that may
// not subscribe to the fleet subject waits the two seconds.
func (s *Server) awaitLeft(id string) func() {
	sub, err := s.nc.SubscribeSync(s.subjects.Fleet())
	if err != nil {
		s.log.Warn("watching the fleet subject", "err", err)
		return func() {}
	}
	return func() {
		defer sub.Unsubscribe()
		deadline := time.Now().Add(min(s.cfg.DrainTimeout, 2*time.Second))
		for {
			m, err := sub.NextMsg(time.Until(deadline))
			if err != nil {
				s.log.Warn("replaced scripted tools did not announce that they left", "id", id, "err", err)
				return
			}
			var n fleet.FleetNotice
			if json.Unmarshal(m.Data, &n) == nil && n.Event == "left" && n.ID == id {
				return
			}
		}
	}
}

// concurrency is the bound of calls the scripts' tool server announces:
// the configured one, and no more than the calls the memory budget holds,
// so that orchestrators send no more than fit.
func (s *Server) concurrency() int {
	c := s.cfg.Concurrency
	if c <= 0 {
		c = 64
	}
	return max(1, min(c, s.memory.Calls(s.perCall)))
}

// admit reserves a call's memory budget from the process's, or refuses the
// call (as busy) when the budget is full.
func (s *Server) admit(*agentfleet.Tool) (func(), error) {
	return s.memory.TryReserve(s.perCall)
}

// reserve waits for room in the process's memory budget for a check or a
// dry run, until ctx ends.
func (s *Server) reserve(ctx context.Context, what string) (func(), error) {
	release, err := s.memory.Reserve(ctx, s.perCall)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return release, nil
}

// build turns def into a served tool, nil (and a log line) when it does not
// pass the checks.
func (s *Server) build(def *script.Definition) *agentfleet.Tool {
	var (
		t   *agentfleet.Tool
		err error
	)
	// Loading runs the script's top-level code, under the process's
	// memory budget like a call.
	ctx, cancel := context.WithTimeout(context.Background(), 3*max(s.env.Timeout, script.DefaultTimeout))
	defer cancel()
	release, err := s.reserve(ctx, def.Name+": checking the script")
	if err != nil {
		s.log.Warn("scripted tool not served", "tool", def.Name, "revision", def.Revision, "err", err)
		return nil
	}
	defer release()
	if s.runner != nil {
		// In a child too.
		err = s.runner.Check(ctx, def)
		t = s.runner.Tool(def)
	} else if t, err = script.New(def, s.env); err == nil {
		t, err = script.WithChecks(t)
	}
	if err != nil {
		s.log.Warn("scripted tool not served", "tool", def.Name, "revision", def.Revision, "err", err)
		return nil
	}
	return t
}

// Store returns the store the server watches.
func (s *Server) Store() *Store { return s.store }

// Served returns the names and revisions of the tools served now.
func (s *Server) Served() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.served)
}

// Close stops watching the bucket and taking dry runs, and drains the tools
// served: calls and dry runs in flight may finish until ctx ends, when they
// are canceled.
func (s *Server) Close(ctx context.Context) error {
	var errs []error
	// No more dry runs; those under way may finish until ctx ends.
	if err := s.dryRunSub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		errs = append(errs, err)
	}
	dried := make(chan struct{})
	go func() { s.dryRuns.Wait(); close(dried) }()
	select {
	case <-dried:
	case <-ctx.Done():
		s.stopDryRun()
		<-dried
	}
	s.stopDryRun()
	s.stop()
	<-s.done
	s.mu.Lock()
	cur := s.current
	s.current, s.served = nil, map[string]uint64{}
	s.mu.Unlock()
	if cur != nil {
		errs = append(errs, cur.Drain(ctx))
	}
	s.draining.Wait()
	errs = append(errs, s.closeClient())
	return errors.Join(errs...)
}

func (s *Server) closeClient() error {
	if s.client == nil {
		return nil
	}
	return s.client.Close()
}
