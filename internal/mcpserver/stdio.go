package mcpserver

import (
	"context"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves agent's MCP server on in and out (a client that
// launched this process: its standard input and output) until the client
// closes in or ctx ends. Every Refresh it lists the tools again and adds,
// replaces and removes tools as they changed, which the SDK tells the
// client with tools/list_changed.
func (s *Server) ServeStdio(ctx context.Context, agent string, in io.ReadCloser, out io.WriteCloser) error {
	es, err := s.entries(ctx, agent)
	if err != nil {
		return err
	}
	srv := s.newServer(agent)
	served := map[string]string{} // name → key
	for _, e := range es {
		srv.AddTool(e.tool, e.handler)
		served[e.tool.Name] = e.key
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		t := time.NewTicker(s.cfg.Refresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			es, err := s.entries(ctx, agent)
			if err != nil {
				s.log.Warn("MCP: listing the tools again failed; keeping those served", "agent", agent, "err", err)
				continue
			}
			next := map[string]string{}
			for _, e := range es {
				next[e.tool.Name] = e.key
				if served[e.tool.Name] != e.key {
					srv.AddTool(e.tool, e.handler)
				}
			}
			var gone []string
			for name := range served {
				if _, ok := next[name]; !ok {
					gone = append(gone, name)
				}
			}
			if len(gone) > 0 {
				srv.RemoveTools(gone...)
			}
			served = next
		}
	}()
	return srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
}
