package worker

import (
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/mcpbridge"
)

// mcpHost serves the tools of one MCP server's bridge on the bus, each set
// as a tool server of kind mcp with the worker's server settings.
type mcpHost struct {
	nc      *bus.Conn
	cfg     toolrpc.ServerConfig // Name and Tools are the bridge's
	objects *objref.Store        // where large results go; nil: none
}

var _ mcpbridge.Host = mcpHost{}

// newMCPHost returns the host of the bridges of a worker configured by cfg.
func newMCPHost(nc *bus.Conn, cfg Config) mcpHost {
	return mcpHost{nc: nc, cfg: toolrpc.ServerConfig{
		Prefix: cfg.Prefix, Concurrency: cfg.Concurrency, Heartbeat: cfg.Heartbeat,
		Logger: cfg.Logger, Observe: cfg.Observe, Tracer: cfg.Tracer, Kind: fleet.KindMCP,
		Outcomes: cfg.outcomes,
	}, objects: cfg.objects}
}

// Serve serves tools on the bus as the tool server called name.
func (h mcpHost) Serve(name string, tools []*agentfleet.Tool) (mcpbridge.Served, error) {
	c := h.cfg
	c.Name = name
	for _, t := range tools {
		c.Tools = append(c.Tools, objref.Offload(t, h.objects))
	}
	srv, err := toolrpc.Serve(h.nc, c)
	if err != nil {
		return nil, err
	}
	return srv, nil
}

// MaxPayload is the connection's max payload.
func (h mcpHost) MaxPayload() int64 { return h.nc.MaxPayload() }
