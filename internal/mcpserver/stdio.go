package mcpserver

import (
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves agent's MCP server on in and out (a client that
// launched this process: its standard input and output) until the client
// closes in or ctx ends. The tools are those of the start.
func (s *Server) ServeStdio(ctx context.Context, agent string, in io.ReadCloser, out io.WriteCloser) error {
	srv, err := s.ForAgent(ctx, agent)
	if err != nil {
		return err
	}
	return srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
}
