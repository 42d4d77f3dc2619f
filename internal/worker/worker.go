// Package worker starts a tool worker: the built-in tools served on the
// fleet through a bus.ToolServer. Both the toolworker command and the
// orchestrator's in-process workers use it.
package worker

import (
	"log/slog"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/tools/builtin"
)

// Config configures a worker; the zero value serves every built-in tool
// with the defaults of bus.ServerConfig.
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
func Start(nc *bus.Conn, cfg Config) (*bus.ToolServer, error) {
	ts := builtin.All(cfg.Builtin)
	if len(cfg.Tools) > 0 {
		var err error
		if ts, err = builtin.Select(ts, cfg.Tools); err != nil {
			return nil, err
		}
	}
	ts = append(ts, cfg.Extra...)
	return bus.Serve(nc, bus.ServerConfig{
		Name: cfg.Name, Prefix: cfg.Prefix, Tools: ts, Concurrency: cfg.Concurrency,
		Heartbeat: cfg.Heartbeat, Logger: cfg.Logger, Observe: cfg.Observe,
	})
}
