// Package worker starts a tool worker: the built-in tools, and optionally the
// fleet's scripted tools and the tools of MCP servers, served on NATS. Both the toolworker command and the
// orchestrator's in-process workers use it.
package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/mcpbridge"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/script/procmem"
	"github.com/agentfleet/agentfleet/internal/tools/builtin"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a worker; the zero value serves every built-in tool
// with the defaults of bus.ServerConfig and no scripts.
type Config struct {
	Name        string
	Prefix      string
	Tools       []string // built-in tools to serve; empty means all, or none when MCP is set
	Extra       []*agentfleet.Tool
	Concurrency int
	Heartbeat   time.Duration
	Builtin     builtin.Options
	Logger      *slog.Logger
	Observe     func(tool, outcome string, d time.Duration)
	// Scripts also serves the scripted tools of the fleet's KV bucket,
	// following its changes; it needs JetStream.
	Scripts   bool
	ScriptEnv script.Env
	// ScriptMemory is the memory budget the script calls of the process
	// share (scriptfleet.ServerConfig.Memory): give every worker of one process
	// the same. Nil: a budget of procmem.DefaultProcessMemory for this
	// worker's scripts.
	ScriptMemory *procmem.ProcessMemory
	// ScriptIsolation and ScriptChildMemory are those of
	// scriptfleet.ServerConfig (Isolation, ChildAddressSpace).
	ScriptIsolation   string
	ScriptChildMemory uint64
	// ScriptReplicas are the replicas of the scripted tools' bucket when
	// this worker is the one that creates it; default 1.
	ScriptReplicas int
	// NoOutcomes turns off recording the outcomes of calls of tools that
	// are not idempotent in toolrpc.OutcomeBucket (recorded when the
	// server has JetStream; see toolrpc.ServerConfig.Outcomes).
	NoOutcomes bool
	// Outcomes configures that bucket when this worker creates it.
	Outcomes toolrpc.OutcomeConfig
	outcomes *toolrpc.Outcomes
	// MCP are MCP servers whose tools this worker serves too, each through
	// an mcpbridge.Bridge; with MCP and no Tools, no built-in tool is
	// served.
	MCP []mcpbridge.Spec
	// MCPStderr receives the standard error of stdio MCP servers; default
	// os.Stderr.
	MCPStderr io.Writer
	// MCPTimeout, when set, is the call timeout of every MCP tool.
	MCPTimeout time.Duration
	// Tracer, if set, records each call as a span (bus.ServerConfig), of
	// the built-in, scripted and MCP tools alike.
	Tracer trace.Tracer
	// Objects configures the object store that the large results of the
	// built-in and MCP tools travel through (objref.Offload), opened when
	// the server has JetStream.
	Objects objref.Config
	objects *objref.Store
}

// Worker is a running worker.
type Worker struct {
	// ToolServer serves the built-in tools; nil when the worker serves
	// only MCP tools.
	*toolrpc.ToolServer
	Scripts *scriptfleet.Server
	MCP     []*mcpbridge.Bridge
	name    string
	conc    int
}

// ParseToolList splits a comma-separated list of tool names.
func ParseToolList(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Start serves the configured tools on nc; it is StartContext with a
// context that never ends.
func Start(nc *bus.Conn, cfg Config) (*Worker, error) {
	return StartContext(context.Background(), nc, cfg)
}

// StartContext serves the configured tools on nc. ctx bounds connecting
// to the MCP servers and listing their tools (each also within 30s), what
// a server that is slow or hostile can make long; when it ends,
// StartContext stops what it started and returns an error that says which
// server it was at.
//
// The tools of an MCP server never take the name of a built-in tool (any
// of them, served here or not), of one of the orchestrator's own tools
// (write_tool, delete_tool, list_tools) or of a tool this worker serves:
// such a tool is not served, with a log line.
func StartContext(ctx context.Context, nc *bus.Conn, cfg Config) (*Worker, error) {
	all := builtin.All(cfg.Builtin)
	ts := all
	if len(cfg.Tools) > 0 {
		var err error
		if ts, err = builtin.Select(ts, cfg.Tools); err != nil {
			return nil, err
		}
	} else if len(cfg.MCP) > 0 {
		ts = nil
	}
	ts = append(ts, cfg.Extra...)
	w := &Worker{name: cfg.Name, conc: cfg.Concurrency}
	cfg.outcomes = openOutcomes(nc, cfg)
	cfg.objects = openObjects(nc, cfg)
	for i, t := range ts {
		ts[i] = objref.Offload(t, cfg.objects)
	}
	if w.name == "" {
		w.name = "toolworker"
	}
	if w.conc <= 0 {
		w.conc = 64
	}
	if len(ts) > 0 || len(cfg.MCP) == 0 {
		srv, err := toolrpc.Serve(nc, toolrpc.ServerConfig{
			Name: cfg.Name, Prefix: cfg.Prefix, Tools: ts, Concurrency: cfg.Concurrency,
			Heartbeat: cfg.Heartbeat, Logger: cfg.Logger, Observe: cfg.Observe, Tracer: cfg.Tracer,
			Kind: fleet.KindBuiltin, Outcomes: cfg.outcomes,
		})
		if err != nil {
			return nil, err
		}
		w.ToolServer = srv
	}
	var reserved []string
	for _, t := range ts {
		reserved = append(reserved, t.Name)
	}
	mcpReserved := append(slices.Clone(reserved), script.OrchestratorTools()...)
	for _, t := range all {
		mcpReserved = append(mcpReserved, t.Name)
	}
	claims := &mcpbridge.Claims{}
	host := newMCPHost(nc, cfg)
	for _, sp := range cfg.MCP {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		b, err := mcpbridge.Start(ctx, host, mcpbridge.Config{
			Spec: sp, Logger: cfg.Logger, Reserved: mcpReserved, Claims: claims, Stderr: cfg.MCPStderr, Timeout: cfg.MCPTimeout,
		})
		cancel()
		if err != nil {
			return nil, errors.Join(err, w.Stop())
		}
		w.MCP = append(w.MCP, b)
	}
	if cfg.Scripts {
		var err error
		// Not ctx: the fleet's own bucket opens within its timeout, and a
		// worker that has announced its built-in tools finishes its start.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.Scripts, err = scriptfleet.Serve(ctx, nc, scriptfleet.ServerConfig{
			Prefix: cfg.Prefix, Concurrency: cfg.Concurrency, Heartbeat: cfg.Heartbeat,
			Logger: cfg.Logger, Observe: cfg.Observe, Env: cfg.ScriptEnv, Reserved: reserved,
			Isolation: cfg.ScriptIsolation, ChildAddressSpace: cfg.ScriptChildMemory, Memory: cfg.ScriptMemory,
			Store: scriptfleet.StoreConfig{Replicas: cfg.ScriptReplicas}, Tracer: cfg.Tracer, Outcomes: cfg.outcomes,
		})
		if err != nil {
			return nil, errors.Join(err, w.Stop())
		}
	}
	return w, nil
}

// Name returns the worker's name, that of its built-in tool server when
// it has one.
func (w *Worker) Name() string {
	if w.ToolServer != nil {
		return w.ToolServer.Name()
	}
	return w.name
}

// InFlight returns the calls running now, of built-in and MCP tools.
func (w *Worker) InFlight() int {
	n := 0
	if w.ToolServer != nil {
		n = w.ToolServer.InFlight()
	}
	for _, b := range w.MCP {
		n += b.InFlight()
	}
	return n
}

// Concurrency returns the calls that may run at once: the bound of the
// built-in tools and that of each MCP server's tools.
func (w *Worker) Concurrency() int {
	n := 0
	if w.ToolServer != nil {
		n = w.conc
	}
	return n + len(w.MCP)*w.conc
}

// Drain stops taking calls and lets those in flight finish until ctx ends.
func (w *Worker) Drain(ctx context.Context) error {
	var errs []error
	if w.Scripts != nil {
		errs = append(errs, w.Scripts.Close(ctx))
	}
	for _, b := range w.MCP {
		errs = append(errs, b.Close(ctx))
	}
	if w.ToolServer != nil {
		errs = append(errs, w.ToolServer.Drain(ctx))
	}
	return errors.Join(errs...)
}

// Stop cancels the calls in flight and stops at once.
func (w *Worker) Stop() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if w.Scripts != nil {
		w.Scripts.Close(ctx)
	}
	var errs []error
	for _, b := range w.MCP {
		errs = append(errs, b.Close(ctx))
	}
	if w.ToolServer != nil {
		errs = append(errs, w.ToolServer.Stop())
	}
	return errors.Join(errs...)
}

// openOutcomes opens the bucket where the worker records outcomes, within
// 5s; nil, with a log line, when it cannot or must not.
func openObjects(nc *bus.Conn, cfg Config) *objref.Store {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := objref.OpenOn(ctx, nc, cfg.Objects)
	if err != nil && cfg.Logger != nil {
		cfg.Logger.Warn("large results cannot travel by reference: they fail past the NATS max payload", "bucket", objref.DefaultBucket, "err", err)
	}
	return st
}

func openOutcomes(nc *bus.Conn, cfg Config) *toolrpc.Outcomes {
	if cfg.NoOutcomes {
		return nil
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o, err := toolrpc.OpenOutcomesOn(ctx, nc, cfg.Outcomes)
	switch {
	case err != nil:
		log.Warn("outcomes of calls are not recorded", "bucket", toolrpc.OutcomeBucket, "err", err)
	case o == nil:
		log.Info("outcomes of calls are not recorded: the NATS server has no JetStream", "bucket", toolrpc.OutcomeBucket)
	}
	return o
}
