// Command toolworker serves tools to an agentfleet over NATS. Start as many
// as you like, on any machine, pointed at the same NATS: each joins the
// queue group of every tool it serves.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	_ "time/tzdata" // get_time must know every zone, even in a bare container

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/cli"
	"github.com/agentfleet/agentfleet/internal/mcpbridge"
	"github.com/agentfleet/agentfleet/internal/metrics"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/script/procmem"
	"github.com/agentfleet/agentfleet/internal/scripts"
	"github.com/agentfleet/agentfleet/internal/tools/builtin"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/agentfleet/agentfleet/internal/worker"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	// With --script-isolation=process, scripts run in children of this
	// executable: such a child runs its script and exits here.
	scripts.RunChildIfRequested()
	cli.Serve("toolworker", NewMain(), nil)
}

// connDrainTimeout bounds the drain of the NATS connection, once the calls
// have ended: a flush and the subscriptions' last deliveries.
const connDrainTimeout = 10 * time.Second

// Main is the toolworker program: ParseFlags, then Run, then Close.
type Main struct {
	NATS         cli.NATSFlags
	Log          cli.LogFlags
	Name         string
	Prefix       string
	Tools        string
	Concurrency  int
	Heartbeat    time.Duration
	AllowPrivate bool
	WeatherURL   string
	DrainTimeout time.Duration
	Scripts      bool
	ScriptSteps  uint64
	Replicas     int
	ScriptTime   time.Duration
	ScriptMemory int64 // bytes
	// ScriptMemoryTotal is the budget the script calls share, in bytes.
	ScriptMemoryTotal int64
	Isolation         string
	ChildMemory       int64 // bytes
	HTTP              string
	Outcomes          bool
	MCP               []mcpbridge.Spec
	MCPTimeout        time.Duration
	// Objects bounds the results that travel through the object store.
	Objects objref.Limits
	Stderr  io.Writer

	logger *slog.Logger
	nc     *bus.Conn
	server *worker.Worker
	http   *metrics.Server
	tracer *tracing.Provider
}

// NewMain returns a Main with the defaults of its flags.
func NewMain() *Main { return &Main{Stderr: os.Stderr} }

// ParseFlags reads the command line.
func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("toolworker", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	m.NATS.Register(fs, "nats://127.0.0.1:4222")
	m.Log.Register(fs)
	fs.StringVar(&m.Name, "name", "toolworker", "micro service name")
	fs.StringVar(&m.Prefix, "prefix", bus.DefaultPrefix, "subject prefix")
	fs.StringVar(&m.Tools, "tools", "", "comma-separated built-in tools to serve (default all: get_time,calculator,sleep,echo,http_fetch,get_weather)")
	fs.IntVar(&m.Concurrency, "concurrency", 64, "calls run at once; more are refused as busy and go to another worker")
	fs.DurationVar(&m.Heartbeat, "heartbeat", time.Second, "interval of heartbeat frames during a call")
	fs.BoolVar(&m.AllowPrivate, "allow-private", false, "let http_fetch reach loopback and private addresses")
	fs.StringVar(&m.WeatherURL, "weather-url", builtin.DefaultWeatherURL, "Open-Meteo-compatible API for get_weather")
	fs.StringVar(&m.HTTP, "http", "", `address of /metrics, /healthz and /readyz, such as ":9090" (default off: several workers may share a host)`)
	fs.BoolVar(&m.Outcomes, "outcomes", true, "record the outcome of each call of a tool not marked idempotent or read_only in the KV bucket agentfleet_outcomes, so that an orchestrator taking over a run uses it (when the server has JetStream)")
	fs.BoolVar(&m.Scripts, "scripts", false, "also serve the fleet's scripted tools (written with write_tool; needs JetStream)")
	fs.IntVar(&m.Replicas, "stream-replicas", 1, "replicas of the scripted tools' KV bucket when this worker creates it (3 in a cluster, as the orchestrator's --stream-replicas)")
	fs.Uint64Var(&m.ScriptSteps, "script-steps", 0, "execution step limit of one scripted call (default 10 million)")
	fs.DurationVar(&m.ScriptTime, "script-timeout", 0, "wall-time limit of one scripted call (default 5s)")
	fs.Var((*byteSize)(&m.ScriptMemory), "script-memory", "memory budget of one scripted call, such as 64MiB: what its repetitions, concatenations, formatting, list building and JSON decoding may allocate in total (default 64MiB)")
	m.ScriptMemoryTotal = procmem.DefaultProcessMemory
	fs.Var((*byteSize)(&m.ScriptMemoryTotal), "script-memory-total", "memory budget that the scripted calls of this process share: each call reserves its --script-memory from it while it runs, and a call that finds no room is refused as busy, so that it goes to another worker or is sent again; at most script-memory-total / script-memory calls run at once")
	fs.StringVar(&m.Isolation, "script-isolation", "none", `where scripts run: "none" in this process, "process" each call in a child process whose address space is limited by --script-process-memory (Linux)`)
	m.ChildMemory = scripts.DefaultChildAddressSpace
	fs.Var((*byteSize)(&m.ChildMemory), "script-process-memory", "with --script-isolation=process, the address space a script's child process may map beyond what it mapped at its start (RLIMIT_AS); more kills the child alone")
	fs.Var((*byteSize)(&m.Objects.Threshold), "object-threshold", "a result block larger than this goes through the object store bucket agentfleet_objects, by reference (default 256KiB; needs JetStream)")
	fs.Var((*byteSize)(&m.Objects.MaxCall), "object-max-call", "bytes one call may put in the object store (default 256MiB)")
	fs.Var((*byteSize)(&m.Objects.MaxSession), "object-max-session", "bytes the objects of one session may hold (default 1GiB)")
	fs.DurationVar(&m.DrainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long calls in flight may run before they are cancelled")
	fs.DurationVar(&m.MCPTimeout, "mcp-timeout", 0, "call timeout of every --mcp tool, such as 5m (default: the agent's tool timeout, 60s unless its profile says otherwise)")
	prefixes := map[string]string{}
	fs.Func("mcp", `serve the tools of an MCP server: NAME=COMMAND ARGS… (stdio) or NAME=URL (streamable HTTP); repeatable; without --tools, no built-in tool is served`, func(v string) error {
		sp, err := mcpbridge.ParseSpec(v)
		if err != nil {
			return err
		}
		for _, o := range m.MCP {
			if o.Name == sp.Name {
				return fmt.Errorf("--mcp %q: a server named %s is already given", v, sp.Name)
			}
		}
		m.MCP = append(m.MCP, sp)
		return nil
	})
	fs.Func("mcp-prefix", "NAME=PREFIX: serve the tools of --mcp server NAME as PREFIX<tool> (default NAME_<tool>); NAME= serves them unprefixed, refusing the names of the fleet's built-in tools; repeatable", func(v string) error {
		name, prefix, err := mcpbridge.ParsePrefix(v)
		if err != nil {
			return err
		}
		prefixes[name] = prefix
		return nil
	})
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if m.MCPTimeout < 0 {
		return fmt.Errorf("--mcp-timeout %v: must not be negative", m.MCPTimeout)
	}
	for name, prefix := range prefixes {
		found := false
		for i := range m.MCP {
			if m.MCP[i].Name == name {
				m.MCP[i].Prefix, m.MCP[i].Unprefixed, found = prefix, prefix == "", true
			}
		}
		if !found {
			return fmt.Errorf("--mcp-prefix %s=%s: no --mcp server is named %s", name, prefix, name)
		}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch m.Isolation {
	case "none", "process":
	default:
		return fmt.Errorf("--script-isolation %q: want none or process", m.Isolation)
	}
	per := m.ScriptMemory
	if per <= 0 {
		per = script.DefaultMaxMemory
	}
	if m.ScriptMemoryTotal < per {
		return fmt.Errorf("--script-memory-total %d bytes is smaller than the budget of one call, --script-memory %d bytes: no scripted call could run", m.ScriptMemoryTotal, per)
	}
	if m.Concurrency < 1 {
		return fmt.Errorf("--concurrency %d: must be at least 1", m.Concurrency)
	}
	if m.Replicas < 1 || m.Replicas > 5 {
		return fmt.Errorf("--stream-replicas %d: JetStream keeps 1 to 5 replicas (3 in a cluster of three servers)", m.Replicas)
	}
	if _, ok := m.Stderr.(*os.File); !ok {
		// The log and the MCP servers' standard error share it, and
		// os/exec copies a child's into a writer that is not a file from
		// a goroutine of its own.
		m.Stderr = &syncWriter{w: m.Stderr}
	}
	var err error
	m.logger, err = m.Log.Logger(m.Stderr)
	return err
}

// syncWriter serializes the writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Run connects to NATS and starts serving; it returns once the worker has
// joined the fleet.
func (m *Main) Run(ctx context.Context) error {
	wm := metrics.NewWorker()
	var err error
	m.http, err = metrics.Listen(m.HTTP, "http", wm.Registry(), func() error {
		if m.nc == nil || !m.nc.IsConnected() {
			return errors.New("not connected to NATS")
		}
		return nil
	})
	if err != nil {
		return err
	}
	if m.tracer, err = tracing.FromEnv(ctx, tracing.Defaults{Service: "agentfleet-toolworker", InstanceID: m.Name}, m.logger); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	var tracer trace.Tracer
	if m.tracer != nil {
		tracer = m.tracer.Tracer()
	}
	if m.nc, err = bus.Connect(m.NATS.Config(m.Name, m.logger)); err != nil {
		return err
	}
	m.server, err = worker.StartContext(ctx, m.nc, worker.Config{
		Name: m.Name, Prefix: m.Prefix, Tools: worker.ParseToolList(m.Tools), Concurrency: m.Concurrency,
		Heartbeat: m.Heartbeat, Logger: m.logger,
		Builtin: builtin.Options{AllowPrivate: m.AllowPrivate, WeatherURL: m.WeatherURL},
		Scripts: m.Scripts, ScriptEnv: script.Env{MaxSteps: m.ScriptSteps, Timeout: m.ScriptTime, MaxMemory: m.ScriptMemory},
		ScriptMemory:    procmem.NewProcessMemory(m.ScriptMemoryTotal),
		ScriptIsolation: isolation(m.Isolation), ScriptChildMemory: uint64(m.ChildMemory), ScriptReplicas: m.Replicas,
		Observe: wm.Observe, MCP: m.MCP, MCPStderr: m.Stderr, MCPTimeout: m.MCPTimeout, Tracer: tracer,
		NoOutcomes: !m.Outcomes, Outcomes: toolrpc.OutcomeConfig{Replicas: m.Replicas},
		Objects: objref.Config{Replicas: m.Replicas, Limits: m.Objects},
	})
	if err != nil {
		m.nc.Close()
		if ctx.Err() != nil {
			return fmt.Errorf("stopped during start-up: %w", err)
		}
		return err
	}
	wm.SetCapacity(m.server.InFlight, m.server.Concurrency)
	m.logger.Info("toolworker serving", "worker", m.server.Name(), "nats", bus.RedactURL(m.nc.ConnectedUrl()), "concurrency", m.Concurrency)
	return nil
}

// Stopping logs, when a signal stops the worker, what Close waits for.
func (m *Main) Stopping(sig os.Signal) {
	if m.server == nil {
		return
	}
	name := sig.String()
	if sig == syscall.SIGTERM {
		name = "SIGTERM"
	} else if sig == syscall.SIGINT {
		name = "SIGINT"
	}
	n := m.server.InFlight()
	m.logger.Info(fmt.Sprintf("stopping on %s: taking no more calls, waiting up to %v for %d calls in flight", name, m.DrainTimeout, n),
		"worker", m.server.Name(), "signal", name, "in_flight", n, "drain_timeout", m.DrainTimeout)
}

// Close drains the worker: it stops taking calls, lets those in flight
// finish (cancelling them after DrainTimeout), and returns once their final
// frames have reached the server and the connection is closed.
func (m *Main) Close() error {
	var errs []error
	if m.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.DrainTimeout)
		errs = append(errs, m.server.Drain(ctx))
		cancel()
		m.logger.Info("toolworker drained", "worker", m.server.Name())
	}
	if m.nc != nil {
		// The results of the calls that ended last are still in the
		// connection's buffer: the process must not exit before they are
		// flushed.
		ctx, cancel := context.WithTimeout(context.Background(), connDrainTimeout)
		errs = append(errs, bus.Drain(ctx, m.nc))
		cancel()
	}
	if m.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, m.http.Shutdown(ctx))
		cancel()
	}
	m.tracer.Close(5 * time.Second) // after the calls' spans ended
	return errors.Join(errs...)
}

// isolation maps the flag to scriptfleet.ServerConfig.Isolation.
func isolation(flag string) string {
	if flag == "process" {
		return scripts.IsolationProcess
	}
	return scripts.IsolationNone
}
