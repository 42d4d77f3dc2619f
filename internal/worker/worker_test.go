package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/mcpbridge"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUnprefixedMCPCannotTakeABuiltinName: a worker that serves get_time
// alone bridges an unprefixed MCP server that lists echo and calculator,
// names of built-in tools this worker does not serve (another worker
// does), and write_tool, the orchestrator's: none is served, each with a
// log line; the server's other tool is.
func TestUnprefixedMCPCannotTakeABuiltinName(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "m", Version: "1"}, nil)
	for _, name := range []string{"echo", "calculator", "write_tool", "lookup"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	logs := &syncBuffer{}
	w, err := worker.StartContext(context.Background(), bustest.MustConnect(t, bustest.MustRunNATS(t)), worker.Config{
		Tools: []string{"get_time"}, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		MCP: []mcpbridge.Spec{{Name: "m", URL: hs.URL, Unprefixed: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := fmt.Sprint(w.MCP[0].Served()); got != "[lookup]" {
		t.Errorf("served %s, want [lookup]", got)
	}
	for _, name := range []string{"echo", "calculator", "write_tool"} {
		want := fmt.Sprintf(`tool=%s err="MCP tool \"%s\": %s is the name of a fleet tool (built-in or of this worker)"`, name, name, name)
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log:\n%s\nwant it to contain %s", logs.String(), want)
		}
	}
}

// TestStartContextEnds: StartContext with a context that has ended fails
// at the first MCP server, saying which, and serves nothing.
func TestStartContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := worker.StartContext(ctx, bustest.MustConnect(t, bustest.MustRunNATS(t)), worker.Config{
		Logger: slog.New(slog.DiscardHandler), MCP: []mcpbridge.Spec{{Name: "late", URL: "http://127.0.0.1:1/mcp"}},
	})
	if err == nil || !strings.Contains(err.Error(), "mcp server late: connect to http://127.0.0.1:1/mcp") {
		t.Errorf("err = %v, want it to name the MCP server and where it was", err)
	}
}
