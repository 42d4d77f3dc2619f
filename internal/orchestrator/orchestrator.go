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
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/erase"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	busfleet "github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	businput "github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/agentfleet/agentfleet/internal/bus/services"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/profile"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
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
	// ContextWindow returns the context window, in tokens, of a model,
	// for the profiles that set no context_window; optional. Without it,
	// or when it returns 0, their history is sent whole until the model
	// refuses a request as too long.
	ContextWindow func(model string) int
	// AgentCost returns what an agent's model calls cost today across the
	// fleet, for the profiles' max_cost_per_agent; optional (0).
	AgentCost func(agent string) float64
	// LocalTools are served by the orchestrator itself to every agent that
	// allows them (list_tools always is).
	LocalTools []*agentfleet.Tool
	// Discovery configures the fleet watcher.
	Discovery busfleet.FleetConfig
	// Tools configures the tool client.
	Tools toolrpc.ClientConfig
	// Before and After are tool call hooks applied to every agent.
	Before pipeline.BeforeHook
	After  pipeline.AfterHook
	Logger *slog.Logger
	// Tracer, if set, records every run as a trace (see loop.Config and
	// package tracing); TraceContent puts tool arguments and results on
	// the spans of tool calls.
	Tracer       trace.Tracer
	TraceContent bool
	// Observer, if set, receives the orchestrator's measurements.
	Observer Observer
	// Durable turns on JetStream: input through a durable consumer, session
	// histories stored, recent events kept. Start fails if the server has
	// no JetStream.
	Durable       bool
	DurableConfig businput.DurableConfig
	// Objects configures the object store of large payloads (objref),
	// opened when the server has JetStream.
	Objects objref.Config
	// DurableOptional lets Start go on without durability, with a warning,
	// when the server has no JetStream.
	DurableOptional bool
	// SessionIdle is how long a session stays in memory after its last
	// run; default 10m. A durable session is loaded again from the history
	// on its next message; without JetStream, an evicted session starts
	// afresh.
	SessionIdle time.Duration
	// SessionQueue bounds the input one session holds waiting for runs;
	// more is refused with an error that says so (durable input is
	// delivered again later). Default DefaultSessionQueue.
	SessionQueue int
	// Now is the clock of the history bounds' max_age (retain.go); default
	// time.Now.
	Now func() time.Time
	// LoadTimeout bounds one load of a session's history; default 10s. A
	// load that fails has the session's input tried again later.
	LoadTimeout time.Duration
	// LeaseTTL bounds how long the partitions of an orchestrator that died
	// stay its own before the others take them over (durable only; see
	// package partition); default partition.DefaultTTL. OnLeaseLost, if
	// set, is called each time this orchestrator loses its lease; it has
	// stopped every session by then, and joins again.
	LeaseTTL    time.Duration
	OnLeaseLost func()
	// Handover bounds how long a partition that moves to another
	// orchestrator waits for its active runs to end before they are
	// suspended and resumed there; default 10s. (On Close, the context of
	// Close bounds it.)
	Handover time.Duration
	// Outcomes configures the bucket where workers record the outcomes of
	// calls of tools that are not idempotent (durable only): a resumed run
	// uses the outcome of such a call found in flight instead of calling
	// it unknown (toolrpc.OutcomeConfig's defaults).
	Outcomes toolrpc.OutcomeConfig
	// MaxDelegationDepth bounds how deep the asks of agents by agents (a
	// profile's agents:) nest; default delegate.DefaultMaxDepth.
	MaxDelegationDepth int
	// AskAgain is how long an ask tool waits for its child's answer before
	// it sends the same ask again (client.AgentAsk.Every); default 15s.
	AskAgain time.Duration
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
	pub      *events.Publisher
	client   *toolrpc.ToolClient
	fleet    *busfleet.Fleet
	input    *businput.Input
	services *services.Services // answers Subjects.AgentTools and Subjects.Call
	durable  *businput.Durable
	history  *history.Store
	// opened is history once it is open, for the services, which answer
	// before it is.
	opened   atomic.Pointer[history.Store]
	forks    *timetravel.Server // durable only: answers the fork subject (timetravel)
	erasing  *erase.Server      // durable only: answers the delete and stop subjects (erase.go)
	tombs    erase.Tombstones   // the sessions deleted lately, whose older input is refused
	outcomes *toolrpc.Outcomes  // durable only: the outcomes workers record (outcomes.go)
	objects  *objref.Store      // large payloads; nil without JetStream (payloads.go)
	table    *partition.Table   // with durable input: the partitions this one owns
	agents   map[string]*agent
	id       string         // this instance, in the records it writes
	loads    chan struct{}  // bounds the sessions loading at once
	replies  bus.ReplyGuard // which reply subjects are answered

	closeOnce sync.Once
	closeErr  error
	life      context.Context // ends when Close begins
	endLife   context.CancelFunc
	bg        sync.WaitGroup // background loops

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
	in       *businput.DurableInput
	stopping bool            // past the shutdown grace: store nothing, settle nothing
	drain    context.Context // while closing: bounds the handover of partitions
}

// agent is one profile with its own tool store (spec section 4: per-agent
// isolation).
type agent struct {
	profile Profile
	store   *tools.Store
	model   loop.Model
	mu      sync.Mutex
	remote  map[string]agentfleet.ToolDef // fleet tools in store
	asks    map[string]string             // ask tool name → the agent it asks
	// transfers: transfer tool name → the agent it hands over to.
	transfers map[string]string
	// The loop template and event sink its sessions share (loopwiring.go).
	tmplOnce sync.Once
	tmpl     *loop.Template
	events   agentfleet.EventSink
	forks    map[string]*loop.Template // by model, for forked sessions (forkmodel.go); mu held
}

// New checks cfg and prepares an orchestrator on nc; Start begins serving.
func New(nc *bus.Conn, cfg Config) (*Orchestrator, error) {
	if cfg.Model == nil && cfg.ModelFor == nil {
		return nil, errors.New("orchestrator: no model configured")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 10 * time.Minute
	}
	if cfg.SessionQueue <= 0 {
		cfg.SessionQueue = DefaultSessionQueue
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LoadTimeout <= 0 {
		cfg.LoadTimeout = 10 * time.Second
	}
	if cfg.Handover <= 0 {
		cfg.Handover = 10 * time.Second
	}
	if len(cfg.Profiles) == 0 {
		cfg.Profiles = []Profile{DefaultProfile()}
	}
	profiles, err := profile.Check(slices.Clone(cfg.Profiles))
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	subjects, err := bus.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	o := &Orchestrator{
		nc: nc, cfg: cfg, subjects: subjects, log: cfg.Logger, replies: bus.ReplyGuard{},
		agents: map[string]*agent{}, sessions: map[string]*session{},
		id: uuid.NewString(), loads: make(chan struct{}, 16),
	}
	o.life, o.endLife = context.WithCancel(context.Background())
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
		if err := a.registerAsks(); err != nil {
			return nil, fmt.Errorf("orchestrator: agent %q: %w", p.Name, err)
		}
		if err := a.registerTransfers(); err != nil {
			return nil, fmt.Errorf("orchestrator: agent %q: %w", p.Name, err)
		}
		o.agents[p.Name] = a
	}
	o.pub = events.NewPublisher(nc, subjects, cfg.Logger)
	if p, ok := cfg.Observer.(interface{ EventPublished(agentfleet.EventType) }); ok {
		o.pub.OnPublish = p.EventPublished
	}
	return o, nil
}

// Ready reports whether the orchestrator serves: connected to NATS, with
// the fleet discovered.
func (o *Orchestrator) Ready() bool {
	return o.nc.IsConnected() && o.fleet != nil
}

// ActiveRuns returns the number of sessions in memory with a run going.
func (o *Orchestrator) ActiveRuns() int {
	o.mu.Lock()
	sessions := slices.Collect(maps.Values(o.sessions))
	o.mu.Unlock()
	n := 0
	for _, s := range sessions {
		s.mu.Lock()
		l := s.loop
		s.mu.Unlock()
		if l != nil && l.Running() {
			n++
		}
	}
	return n
}

// Fleet returns the fleet watcher (after Start).
func (o *Orchestrator) Fleet() *busfleet.Fleet { return o.fleet }

// Publisher returns the event publisher.
func (o *Orchestrator) Publisher() *events.Publisher { return o.pub }

// Stored returns the connection, the subjects and the history store
// (nil without durability) the orchestrator serves with.
func (o *Orchestrator) Stored() (*bus.Conn, bus.Subjects, *history.Store) {
	return o.nc, o.subjects, o.history
}

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

// sink is the sink of the orchestrator's events (sink.go).
func (o *Orchestrator) sink() agentfleet.EventSink {
	return NewSink(o.id, o.cfg.Observer, o.pub, o.log)
}
