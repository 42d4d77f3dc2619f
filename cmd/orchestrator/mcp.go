package main

import (
	"net"

	"github.com/agentfleet/agentfleet/internal/mcpserver"
)

// startMCP serves the fleet as an MCP server at /mcp of --http, once the
// orchestrator serves: before, /mcp is not there (the dashboard's / may
// answer it).
func (m *Main) startMCP() {
	if m.http == nil || !m.MCP {
		return
	}
	h := mcpserver.New(mcpserver.Config{Backend: mcpserver.Local(m.orch), Token: m.MCPToken, Logger: m.logger}).Handler()
	m.http.Handle("/mcp", h)
	m.http.Handle("/mcp/", h)
	if m.MCPToken == "" && !loopback(m.http.Addr()) {
		m.logger.Warn("/mcp is served without a bearer token on a non-loopback address: anyone who reaches it may run the agents and their tools; give --mcp-token", "http", m.http.Addr())
	}
	m.logger.Info("MCP server", "url", "http://"+m.http.Addr()+"/mcp", "token", m.MCPToken != "")
}

// loopback reports whether addr's host is a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
