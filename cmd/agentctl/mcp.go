package main

import (
	"context"
	"io"

	"github.com/agentfleet/agentfleet/internal/mcpserver"
)

// mcp serves the fleet as an MCP server on standard input and output, for
// MCP clients that launch a command: the tools of the agent (default
// "default") and every agent's ask tool. Tool calls run on an
// orchestrator's pipeline (<prefix>.call.<agent>.<session>), asks on
// <prefix>.ask.<agent>.<session>; the log goes to standard error.
func (m *Main) mcp(ctx context.Context) error {
	agent := mcpserver.DefaultAgent
	if len(m.pos) == 1 {
		agent = m.pos[0]
	}
	s := mcpserver.New(mcpserver.Config{Backend: mcpserver.Remote(m.conn.NATS(), m.subjects, m.Timeout), Logger: m.logger})
	in, ok := m.Stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(m.Stdin)
	}
	out, ok := m.Stdout.(io.WriteCloser)
	if !ok {
		out = nopWriteCloser{m.Stdout}
	}
	return s.ServeStdio(ctx, agent, in, out)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
