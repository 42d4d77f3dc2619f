// Command orchestrator runs the agent loop of an agentfleet: it takes user
// messages from NATS subjects, calls the model, runs tool calls on the tool
// workers of the fleet and publishes lifecycle events.
//
// Without --nats-url it starts an embedded NATS server (with JetStream) that
// separate tool workers can join; with --workers N it also runs N tool
// workers in the process, so that one command runs the whole system.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	_ "time/tzdata" // get_time in the in-process workers must know every zone

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/limiter"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/cli"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/httpauth"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/metrics"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/profile"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/script/procmem"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/agentfleet/agentfleet/internal/tools/builtin"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/nats-io/nats-server/v2/server"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	cli.Serve("orchestrator", NewMain(), nil)
}

// Main is the orchestrator program: ParseFlags, then Run, then Close.
type Main struct {
	NATS       cli.NATSFlags
	Log        cli.LogFlags
	Listen     string
	DataDir    string
	NATSConfig string
	// Sync is when the embedded server's JetStream syncs to disk (--sync).
	Sync       busserver.Sync
	Workers    int
	WorkerConc int
	// ScriptMemoryTotal is the bytes of memory budget the in-process
	// workers' script calls share.
	ScriptMemoryTotal int64
	Config            string
	Prefix            string
	Model             string
	LLMStream         bool
	LLMConc           int
	LLMTimeout        time.Duration
	MaxRetryDelay     time.Duration
	Heartbeat         time.Duration
	ShutdownWait      time.Duration
	Durable           string
	Streams           input.DurableConfig
	SessionIdle       time.Duration
	HTTP              string
	MCPToken          string
	HTTPAuth          httpauth.Flags
	DashLimits        dashboard.Limits
	MCP               bool
	A2A               bool
	Dashboard         bool
	TraceURL          string
	TraceView         tracing.RecentConfig
	Elect             bool
	LeaseTTL          time.Duration
	llmCfg            llm.Config
	metrics           *metrics.Orchestrator
	http              *metrics.Server
	guard             *httpauth.Guard
	dash              *dashboard.Handler
	Stderr            io.Writer

	logger    *slog.Logger
	profiles  []orchestrator.Profile
	endpoints []profile.Endpoint
	limiter   *limiter.Limiter
	embedded  *server.Server
	nc        *bus.Conn
	workers   []*worker.Worker
	wconns    []*bus.Conn
	orch      *orchestrator.Orchestrator
	tracer    *tracing.Provider
}

// NewMain returns a Main with the defaults of its flags.
func NewMain() *Main { return &Main{Stderr: os.Stderr} }

// ParseFlags reads the command line and the agent profiles file.
func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("orchestrator", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	m.NATS.Register(fs, "")
	m.Log.Register(fs)
	fs.StringVar(&m.HTTP, "http", "127.0.0.1:8080", `address of the dashboard (/), /mcp, /a2a, /metrics, /healthz and /readyz ("" turns it off)`)
	fs.BoolVar(&m.Dashboard, "dashboard", true, "serve the browser dashboard at / of --http")
	fs.StringVar(&m.TraceURL, "trace-url", os.Getenv("AGENTFLEET_TRACE_URL"), "link the dashboard's trace ids to this tracing UI URL, {trace_id} replaced by the id, e.g. http://localhost:16686/trace/{trace_id} (default $AGENTFLEET_TRACE_URL)")
	fs.BoolVar(&m.A2A, "serve-a2a", true, "serve every agent over A2A (JSON-RPC, SSE) at /a2a/<agent> of --http, with its Agent Card, the default agent's at /.well-known/agent-card.json")
	fs.BoolVar(&m.MCP, "serve-mcp", true, "serve the fleet as an MCP server (streamable HTTP, stateless) at /mcp of --http")
	fs.StringVar(&m.MCPToken, "mcp-token", os.Getenv("AGENTFLEET_MCP_TOKEN"), "one more bearer token accepted on /mcp (and only there) besides the writer token of --http-token-file; alone it guards /mcp and nothing else (default $AGENTFLEET_MCP_TOKEN)")
	m.HTTPAuth.Register(fs, true)
	m.DashLimits.Register(fs)
	m.registerTraceView(fs)
	fs.StringVar(&m.Listen, "listen", "127.0.0.1:4222", "address of the embedded NATS server (when --nats-url is not given)")
	fs.StringVar(&m.DataDir, "data-dir", "./data", "JetStream data directory of the embedded NATS server")
	fs.StringVar(&m.NATSConfig, "nats-config", "", "nats-server configuration file for the embedded server (users, permissions, TLS)")
	syncFlag := fs.String("sync", "always", "when the embedded NATS server's JetStream writes its store to disk with fsync: always (before every acknowledgement, so that acknowledged input, history and leases survive a power cut), or a duration such as 2m (nats-server's lazy default: a power cut or an OS crash loses up to that much of what was acknowledged); overrides sync_interval of --nats-config")
	fs.IntVar(&m.Workers, "workers", 0, "tool workers to run inside this process")
	fs.IntVar(&m.WorkerConc, "worker-concurrency", 64, "concurrency of each in-process tool worker")
	fs.Int64Var(&m.ScriptMemoryTotal, "script-memory-total", procmem.DefaultProcessMemory, "bytes of memory budget that the scripted calls of the in-process workers share: each call reserves its 64 MiB budget from it while it runs, and a call that finds no room is refused as busy, so that it goes to another worker or is sent again")
	fs.StringVar(&m.Config, "config", "", "agent profiles file (YAML or JSON); default one profile \"default\" with every tool")
	fs.StringVar(&m.Prefix, "prefix", bus.DefaultPrefix, "subject prefix")
	fs.StringVar(&m.Model, "model", "", "default model name (default $OPENAI_MODEL, else "+llm.DefaultModel+")")
	fs.BoolVar(&m.LLMStream, "llm-stream", true, "stream model responses; false for servers whose streaming of tool calls is broken")
	fs.IntVar(&m.LLMConc, "llm-concurrency", llm.DefaultConcurrency, "model requests in flight at once, across all sessions")
	fs.DurationVar(&m.LLMTimeout, "llm-timeout", llm.DefaultRequestTimeout, "bound of one model request")
	fs.DurationVar(&m.MaxRetryDelay, "max-retry-delay", llm.DefaultMaxRetryDelay, "cap of the wait between model retries")
	fs.DurationVar(&m.Heartbeat, "heartbeat", time.Second, "heartbeat interval of the in-process workers")
	fs.DurationVar(&m.ShutdownWait, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long active runs may take to finish before they are left for a restart to resume")
	fs.StringVar(&m.Durable, "durable", "auto", "JetStream durability of input, sessions and events: auto (when the server has JetStream), true or false")
	fs.DurationVar(&m.Streams.AckWait, "ack-wait", 30*time.Second, "redeliver input not acknowledged (nor kept alive) for this long")
	fs.IntVar(&m.Streams.MaxDeliver, "max-deliver", 5, "failed handlings of one input message (a session that could not be loaded, say) before it is dropped with an error event; redeliveries after a crash or a handover do not count")
	fs.DurationVar(&m.Streams.EventsMaxAge, "events-max-age", 24*time.Hour, "how long the event stream keeps events for late observers")
	fs.Int64Var(&m.Streams.EventsMaxBytes, "events-max-bytes", 0, "size bound of the event stream (0: 128 MiB in memory, 1 GiB in files)")
	eventsStorage := fs.String("events-storage", string(input.EventsMemory), "where the event stream keeps events for late observers: memory (no disk write per event; a restart of a lone server forgets them) or file; an event stream that exists keeps its storage until it is deleted")
	fs.DurationVar(&m.Streams.HistoryMaxAge, "history-max-age", 0, "how long the history stream keeps a record, whatever its session (0: forever; the agents' history bounds cut sessions by whole runs)")
	fs.Int64Var(&m.Streams.HistoryMaxBytes, "history-max-bytes", 0, "size bound of the history stream, its oldest records dropped first whatever their session (0: none but the server's limits)")
	fs.DurationVar(&m.Streams.InputMaxAge, "input-max-age", input.DefaultInputMaxAge, "how long input waits in the input stream for its run (0: forever)")
	fs.Int64Var(&m.Streams.InputMaxBytes, "input-max-bytes", 0, "size bound of the input stream; a full stream refuses new input (0: none but the server's limits)")
	fs.IntVar(&m.Streams.Replicas, "stream-replicas", 1, "replicas of the JetStream streams (3 in a cluster)")
	fs.DurationVar(&m.LeaseTTL, "lease-ttl", partition.DefaultTTL, "with JetStream, how long the session partitions of an orchestrator that died stay its own before the others take them over")
	fs.BoolVar(&m.Elect, "elect", true, "retired: every orchestrator is active and owns a share of the sessions; the flag is ignored")
	fs.DurationVar(&m.LeaseTTL, "leader-ttl", partition.DefaultTTL, "retired: the same as --lease-ttl")
	fs.DurationVar(&m.SessionIdle, "session-idle", 10*time.Minute, "evict sessions idle this long from memory (durable only)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	sync, err := busserver.ParseSync(*syncFlag)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	m.Sync = sync
	if m.Streams.EventsStorage, err = input.ParseEventsStorage(*eventsStorage); err != nil {
		return fmt.Errorf("--%w", err)
	}
	switch m.Durable {
	case "auto", "true", "false":
	default:
		return fmt.Errorf("--durable %q: want auto, true or false", m.Durable)
	}
	if m.ScriptMemoryTotal < script.DefaultMaxMemory {
		return fmt.Errorf("--script-memory-total %d: must be at least the %d bytes of one scripted call's budget", m.ScriptMemoryTotal, script.DefaultMaxMemory)
	}
	if m.Workers < 0 {
		return fmt.Errorf("--workers %d: must not be negative", m.Workers)
	}
	if err := m.checkStreamLimits(); err != nil {
		return err
	}
	if err := dashboard.CheckTraceURL(m.TraceURL); err != nil {
		return fmt.Errorf("%s: %w", cli.FlagSource(fs, "trace-url", "AGENTFLEET_TRACE_URL"), err)
	}
	if m.logger, err = m.Log.Logger(m.Stderr); err != nil {
		return err
	}
	choice := cli.NATSChoice{URL: m.NATS.URL}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "nats-url":
			choice.URLGiven = true
		case "listen", "data-dir", "nats-config":
			choice.Embedded = append(choice.Embedded, "--"+f.Name)
		}
	})
	var note string
	if m.NATS.URL, note, err = cli.ChooseNATS(choice); err != nil {
		return err
	} else if note != "" {
		m.logger.Warn(note)
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "elect":
			m.logger.Warn("--elect is retired and ignored: every orchestrator of a prefix is active and owns a share of the sessions")
		case "leader-ttl":
			m.logger.Warn("--leader-ttl is retired: use --lease-ttl")
		case "sync":
			if m.NATS.URL != "" {
				m.logger.Warn("--sync applies to the embedded server only: with --nats-url the server's own sync_interval decides (docs/OPERATIONS.md, \"Acknowledged means on disk\")")
			}
		}
	})
	if m.HTTP != "" {
		// What is served is covered without the tokens of --http-token-file
		// when no dashboard is, /mcp has its token or is not served, and
		// A2A is not served.
		covered := !m.Dashboard && (!m.MCP || m.MCPToken != "") && !m.A2A
		if m.guard, err = m.HTTPAuth.Guard("--http", m.HTTP, m.MCPToken, covered, m.logger); err != nil {
			return err
		}
	}
	if m.Config != "" {
		c, err := profile.LoadConfig(m.Config)
		if err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		m.profiles, m.endpoints = c.Agents, c.Endpoints
	}
	return nil
}

// Run starts the system and returns once it serves.
func (m *Main) Run(ctx context.Context) error {
	m.metrics = metrics.NewOrchestrator()
	var err error
	// First, so that a taken port fails the start at once.
	var wrap func(http.Handler) http.Handler
	if m.guard != nil {
		wrap = m.guard.Wrap
	}
	if m.http, err = metrics.ListenWrapped(m.HTTP, "http", m.metrics.Registry(), m.ready, wrap); err != nil {
		return fmt.Errorf("%w\n(another orchestrator may be running: turn the HTTP listener off with --http \"\", or give another address such as --http 127.0.0.1:0 for any free port)", err)
	}
	if m.tracer, err = tracing.FromEnv(ctx, tracing.Defaults{Service: "agentfleet-orchestrator", Recent: m.TraceView}, m.logger); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	var tracer trace.Tracer
	if m.tracer != nil {
		tracer = m.tracer.Tracer()
	}
	url := m.NATS.URL
	if url == "" {
		m.embedded, err = busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: m.Listen, DataDir: m.DataDir, ConfigFile: m.NATSConfig, Sync: m.Sync})
		switch {
		case errors.Is(err, busserver.ErrListen):
			return fmt.Errorf("%w\n(another NATS server or orchestrator may be running: join that server with --nats-url nats://%s, or start a second one with another --listen address and its own --data-dir, since two servers must not share a JetStream store)", err, m.Listen)
		case errors.Is(err, busserver.ErrDataDirInUse):
			return fmt.Errorf("--data-dir %s: %w\n(join the orchestrator that uses it with --nats-url, or give this one its own --data-dir)", m.DataDir, err)
		case errors.Is(err, busserver.ErrDataDir):
			return fmt.Errorf("--data-dir %s: %w\n(give --data-dir a folder this user may create and write)", m.DataDir, err)
		}
		if err != nil {
			return err
		}
		url = m.embedded.ClientURL()
		m.logger.Info("embedded NATS server", "url", url, "data_dir", m.DataDir, "sync", m.Sync.String())
		if !m.Sync.Always() {
			m.logger.Warn("JetStream syncs its store lazily (--sync): a power cut or an OS crash loses what was acknowledged in up to the last interval", "sync", m.Sync.String())
		}
	}
	nf := m.NATS
	nf.URL = url
	if m.nc, err = bus.Connect(nf.Config("orchestrator", m.logger)); err != nil {
		return err
	}
	// Scripted tools live in a JetStream KV bucket.
	scripted := m.Durable != "false" && input.HasJetStream(ctx, m.nc)
	// The in-process workers' scripts share one budget: they share the
	// process.
	scriptMemory := procmem.NewProcessMemory(m.ScriptMemoryTotal)
	for i := range m.Workers {
		wc, err := bus.Connect(nf.Config(fmt.Sprintf("toolworker-%d", i+1), m.logger))
		if err != nil {
			return err
		}
		m.wconns = append(m.wconns, wc)
		w, err := worker.Start(wc, worker.Config{Prefix: m.Prefix, Concurrency: m.WorkerConc, Heartbeat: m.Heartbeat, Logger: m.logger, Builtin: builtin.Options{}, Scripts: scripted,
			ScriptMemory: scriptMemory,
			Observe:      m.metrics.Workers().Observe, Tracer: tracer})
		if err != nil {
			return err
		}
		m.workers = append(m.workers, w)
	}
	if m.Workers > 0 {
		// The fleet counts services: a worker that serves scripts runs a
		// second one for them, so the fleet's count is not this one.
		m.logger.Info("in-process tool workers", "workers", m.Workers, "scripts", scripted, "concurrency", m.WorkerConc)
	}
	m.metrics.Workers().SetCapacity(m.workerSum((*worker.Worker).InFlight), m.workerSum((*worker.Worker).Concurrency))
	var (
		model    loop.Model
		name     string
		modelFor func(p *orchestrator.Profile) loop.Model
	)
	if len(m.endpoints) > 0 {
		model, name, modelFor, err = m.endpointModels(ctx, m.Durable != "false" && input.HasJetStream(ctx, m.nc))
	} else {
		model, name, err = m.model()
		modelFor = m.modelFor(model)
	}
	if err != nil {
		return err
	}
	var local []*agentfleet.Tool
	if scripted {
		store, err := scriptfleet.NewStore(ctx, m.nc, scriptfleet.StoreConfig{Replicas: m.Streams.Replicas})
		if err != nil {
			return err
		}
		// write_tool checks names against the whole fleet and this
		// process's own tools.
		fleet := func() []agentfleet.ToolDef {
			defs := m.orch.Fleet().Tools()
			for _, t := range local {
				defs = append(defs, t.ToolDef)
			}
			return append(defs, agentfleet.ToolDef{Name: tools.ListToolsName})
		}
		local = []*agentfleet.Tool{
			// The dry run runs model-written code: on a script worker,
			// never in this process.
			m.announced(script.WriteTool(store, fleet, scriptfleet.RemoteDryRun(m.nc, m.Prefix)), agentfleet.EventToolWritten),
			m.announced(script.DeleteTool(store, fleet), agentfleet.EventToolDeleted),
		}
	}
	m.orch, err = orchestrator.New(m.nc, orchestrator.Config{
		Prefix: m.Prefix, Profiles: m.profiles, Model: model, ModelName: name, Logger: m.logger, LocalTools: local,
		ModelFor: modelFor, ContextWindow: llm.ContextWindow, AgentCost: m.agentCost(),
		Durable: m.Durable != "false", DurableOptional: m.Durable == "auto",
		DurableConfig: m.Streams, SessionIdle: m.SessionIdle, Observer: m.metrics,
		LeaseTTL: m.LeaseTTL, OnLeaseLost: m.metrics.LeaseLost,
		Tracer: tracer, TraceContent: m.tracer != nil && m.tracer.Content,
	})
	if err != nil {
		return err
	}
	m.metrics.SetSessions(m.orch.Sessions)
	if err := m.orch.Start(ctx); err != nil {
		return err
	}
	if err := m.startDashboard(ctx); err != nil {
		return err
	}
	m.startMCP()
	m.startA2A()
	return nil
}

// ready says why the orchestrator does not serve yet, for /readyz: NATS
// connected, the fleet discovered with at least one tool, a model.
func (m *Main) ready() error {
	switch {
	case m.orch == nil || m.nc == nil:
		return errors.New("starting")
	case !m.nc.IsConnected():
		return errors.New("not connected to NATS")
	case !m.orch.Ready():
		return errors.New("the fleet is not discovered yet")
	case len(m.orch.Fleet().Tools()) == 0:
		return errors.New("no tool worker has joined")
	}
	return nil
}

func (m *Main) workerSum(f func(*worker.Worker) int) func() int {
	return func() int {
		n := 0
		for _, w := range m.workers {
			n += f(w)
		}
		return n
	}
}

// model chooses the model: an OpenAI-compatible server when one is
// configured, else the offline model.
func (m *Main) model() (loop.Model, string, error) {
	cfg := llm.ConfigFromEnv()
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		m.logger.Warn("neither OPENAI_API_KEY nor OPENAI_BASE_URL is set: using the built-in offline model, a deterministic stand-in that only knows a few rules; set them to use a real model")
		return llm.Offline{}, llm.OfflineName, nil
	}
	if m.Model != "" {
		cfg.Model = m.Model
	}
	cfg.Stream = &m.LLMStream
	cfg.Concurrency, cfg.RequestTimeout, cfg.MaxRetryDelay = m.LLMConc, m.LLMTimeout, m.MaxRetryDelay
	cfg.Observe = func(d time.Duration, err error) { m.metrics.LLMRequest(d, err, llm.Class(err)) }
	c, err := llm.New(cfg)
	if err != nil {
		return nil, "", err
	}
	name := cfg.Model
	if name == "" {
		name = llm.DefaultModel
	}
	m.logger.Info("model", "base_url", orDefault(cfg.BaseURL, llm.DefaultBaseURL), "model", name, "stream", m.LLMStream)
	m.llmCfg = cfg
	return c, name, nil
}

// modelFor gives profiles that choose another streaming mode a client of
// their own.
func (m *Main) modelFor(def loop.Model) func(p *orchestrator.Profile) loop.Model {
	clients := map[bool]loop.Model{m.LLMStream: def}
	return func(p *orchestrator.Profile) loop.Model {
		if p.Stream == nil || m.llmCfg.BaseURL == "" && m.llmCfg.APIKey == "" {
			return def
		}
		if c, ok := clients[*p.Stream]; ok {
			return c
		}
		cfg := m.llmCfg
		cfg.Stream = p.Stream
		c, err := llm.New(cfg)
		if err != nil {
			return def
		}
		clients[*p.Stream] = c
		return c
	}
}

// announced wraps write_tool or delete_tool: after a change is stored it
// waits (a few seconds at most) until the fleet serves it, so that the
// model's next turn sees it, and publishes a fleet event.
func (m *Main) announced(t *agentfleet.Tool, kind agentfleet.EventType) *agentfleet.Tool {
	inner := t.Handler
	wrapped := *t
	wrapped.Handler = agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
		res, err := inner.Call(ctx, call)
		if err != nil {
			return nil, err
		}
		name, _ := call.Arguments["name"].(string)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		werr := m.orch.WaitTool(wctx, name, kind == agentfleet.EventToolWritten)
		cancel()
		if werr != nil && kind == agentfleet.EventToolWritten {
			res.Content = append(res.Content, agentfleet.Text("The fleet does not serve it yet (no worker runs scripts?); try again in a moment."))
		}
		m.orch.Publisher().Emit(&agentfleet.Event{
			Type: kind, Agent: "_", Session: "fleet", Time: time.Now().UTC(),
			ToolCallID: call.ID, ToolName: name, Result: res,
		})
		return res, nil
	})
	return &wrapped
}

// Orchestrator returns the running orchestrator (after Run).
func (m *Main) Orchestrator() *orchestrator.Orchestrator { return m.orch }

// NATSURL returns the URL clients connect to (after Run).
func (m *Main) NATSURL() string {
	if m.embedded != nil {
		return m.embedded.ClientURL()
	}
	return m.NATS.URL
}

// Stopping logs, when a signal stops the orchestrator, what Close is about
// to wait for: without it a shutdown that waits for runs looks hung.
func (m *Main) Stopping(sig os.Signal) {
	runs := 0
	if m.orch != nil {
		runs = m.orch.ActiveRuns()
	}
	m.logger.Info(fmt.Sprintf("stopping on %s: waiting up to %v for %d active runs; those still going then are suspended for a restart to resume", sigName(sig), m.ShutdownWait, runs),
		"signal", sigName(sig), "active_runs", runs, "shutdown_timeout", m.ShutdownWait)
}

// sigName is the conventional name of a signal, SIGTERM rather than
// "terminated".
func sigName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}

// Close stops taking input, lets active runs end within ShutdownWait, drains
// the in-process workers and the connections (what they published confirmed
// by the server before they close) and stops the embedded server.
func (m *Main) Close() error {
	var errs []error
	// First: its event streams would hold the HTTP shutdown.
	if m.dash != nil {
		errs = append(errs, m.dash.Close())
	}
	if m.orch != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.ShutdownWait)
		errs = append(errs, wrapErr("orchestrator", m.orch.Close(ctx)))
		cancel()
	}
	if m.limiter != nil {
		m.limiter.Close()
	}
	for _, w := range m.workers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, wrapErr("in-process worker "+w.Name(), w.Drain(ctx)))
		cancel()
	}
	// Close alone writes out the buffers but confirms nothing; the
	// workers' last results go to other processes.
	for _, c := range m.wconns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, bus.Drain(ctx, c))
		cancel()
	}
	if m.nc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, bus.Drain(ctx, m.nc))
		cancel()
	}
	if m.embedded != nil {
		m.embedded.Shutdown()
		m.embedded.WaitForShutdown()
	}
	if m.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, wrapErr("http "+m.HTTPAddr(), m.http.Shutdown(ctx)))
		cancel()
	}
	m.tracer.Close(5 * time.Second) // after the runs' spans ended
	return errors.Join(errs...)
}

// wrapErr names what err, if any, is the error of.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// HTTPAddr returns the address of the metrics listener, empty when off.
func (m *Main) HTTPAddr() string {
	if m.http == nil {
		return ""
	}
	return m.http.Addr()
}
