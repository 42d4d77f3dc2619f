package main

import (
	"github.com/agentfleet/agentfleet/internal/mcpserver"
)

// startMCP serves the fleet as an MCP server at /mcp of --http, once the
// orchestrator serves: before, /mcp is not there (the dashboard's / may
// answer it). The listener's guard checks its credentials: the writer
// token of --http-token-file, or --mcp-token.
func (m *Main) startMCP() {
	if m.http == nil || !m.MCP {
		return
	}
	h := mcpserver.New(mcpserver.Config{Backend: mcpserver.Local(m.orch), Logger: m.logger}).Handler()
	m.http.Handle("/mcp", h)
	m.http.Handle("/mcp/", h)
	m.logger.Info("MCP server", "url", "http://"+m.http.Addr()+"/mcp", "token", m.MCPToken != "" || m.guard.Protected())
}
