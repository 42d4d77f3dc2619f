// Package worker starts a tool worker: the built-in tools, and optionally the
// fleet's scripted tools, served on NATS. Both the toolworker command and the
// orchestrator's in-process workers use it.
package worker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/scripts"
	"github.com/agentfleet/agentfleet/internal/tools/builtin"
)

// Config configures a worker; the zero value serves every built-in tool
// with the defaults of bus.ServerConfig and no scripts.
type Config struct {
	Name        string
	Prefix      string
	Tools       []string // built-in tools to serve; empty means all
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
	// ScriptIsolation and ScriptChildMemory are those of
	// scripts.ServerConfig (Isolation, ChildAddressSpace).
	ScriptIsolation   string
	ScriptChildMemory uint64
	// ScriptReplicas are the replicas of the scripted tools' bucket when
	// this worker is the one that creates it; default 1.
	ScriptReplicas int
}

// Worker is a running worker.
type Worker struct {
	*bus.ToolServer
	Scripts *scripts.Server
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

// Start serves the configured tools on nc.
func Start(nc *bus.Conn, cfg Config) (*Worker, error) {
	ts := builtin.All(cfg.Builtin)
	if len(cfg.Tools) > 0 {
		var err error
		if ts, err = builtin.Select(ts, cfg.Tools); err != nil {
			return nil, err
		}
	}
	ts = append(ts, cfg.Extra...)
	srv, err := bus.Serve(nc, bus.ServerConfig{
		Name: cfg.Name, Prefix: cfg.Prefix, Tools: ts, Concurrency: cfg.Concurrency,
		Heartbeat: cfg.Heartbeat, Logger: cfg.Logger, Observe: cfg.Observe,
	})
	if err != nil {
		return nil, err
	}
	w := &Worker{ToolServer: srv}
	if cfg.Scripts {
		var reserved []string
		for _, t := range ts {
			reserved = append(reserved, t.Name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.Scripts, err = scripts.Serve(ctx, nc, scripts.ServerConfig{
			Prefix: cfg.Prefix, Concurrency: cfg.Concurrency, Heartbeat: cfg.Heartbeat,
			Logger: cfg.Logger, Observe: cfg.Observe, Env: cfg.ScriptEnv, Reserved: reserved,
			Isolation: cfg.ScriptIsolation, ChildAddressSpace: cfg.ScriptChildMemory,
			Store: scripts.StoreConfig{Replicas: cfg.ScriptReplicas},
		})
		if err != nil {
			return nil, errors.Join(err, srv.Stop())
		}
	}
	return w, nil
}

// Drain stops taking calls and lets those in flight finish until ctx ends.
func (w *Worker) Drain(ctx context.Context) error {
	var errs []error
	if w.Scripts != nil {
		errs = append(errs, w.Scripts.Close(ctx))
	}
	return errors.Join(append(errs, w.ToolServer.Drain(ctx))...)
}

// Stop cancels the calls in flight and stops at once.
func (w *Worker) Stop() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if w.Scripts != nil {
		w.Scripts.Close(ctx)
	}
	return w.ToolServer.Stop()
}
