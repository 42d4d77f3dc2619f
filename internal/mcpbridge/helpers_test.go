package mcpbridge_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busfleet "github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/mcpbridge"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// npmBin returns the path of a program installed by npm ci in
// testdata/npm, skipping the test when node or the packages are absent.
func npmBin(t *testing.T, name string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed, so the tests against the npm MCP packages are skipped (install Node.js 20 or later)")
	}
	p, err := filepath.Abs(filepath.Join("testdata", "npm", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed, so this test is skipped: run (cd internal/mcpbridge/testdata/npm && npm ci --no-audit --no-fund)", name)
	}
	return p
}

// fleet is a NATS server, a tool client on it and the host of the
// bridges, which serves their tools there as a worker does.
type fleet struct {
	nc     *nats.Conn
	client *toolrpc.ToolClient
	host   mcpbridge.Host
}

// natsHost serves a bridge's tools on NATS as tool servers of kind mcp.
type natsHost struct{ nc *nats.Conn }

func (h natsHost) Serve(name string, tools []*agentfleet.Tool) (mcpbridge.Served, error) {
	srv, err := toolrpc.Serve(h.nc, toolrpc.ServerConfig{Name: name, Tools: tools, Kind: busfleet.KindMCP, Logger: quiet()})
	if err != nil {
		return nil, err
	}
	return srv, nil
}

func (h natsHost) MaxPayload() int64 { return h.nc.MaxPayload() }

func newFleet(t *testing.T) *fleet {
	t.Helper()
	return newFleetOn(t, bustest.MustRunNATS(t))
}

// newFleetOn is newFleet on a running NATS server.
func newFleetOn(t *testing.T, s *server.Server) *fleet {
	t.Helper()
	nc := bustest.MustConnect(t, s)
	c, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &fleet{nc: nc, client: c, host: natsHost{nc}}
}

// call runs a tool on the fleet as the orchestrator's executor would.
func (f *fleet) call(ctx context.Context, name string, args map[string]any, progress func(any)) (*agentfleet.ToolResult, error) {
	if progress == nil {
		progress = func(any) {}
	}
	return fleetexec.Executor{Client: f.client}.Execute(ctx, &pipeline.Prepared{
		Tool:    &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Annotations: agentfleet.Annotations{}}},
		Call:    agentfleet.ToolCall{ID: "call-" + name, Name: name, Arguments: args},
		Args:    args,
		Timeout: 20 * time.Second,
	}, progress)
}

// start starts a bridge on f, closed when the test ends.
func (f *fleet) start(t *testing.T, cfg mcpbridge.Config) *mcpbridge.Bridge {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := mcpbridge.Start(ctx, f.host, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("close bridge: %v", err)
		}
	})
	return b
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// logBuffer is a logger whose lines a test can read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func text(t *testing.T, res *agentfleet.ToolResult, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return agentfleet.JoinText(res.Content)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mustContain(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Fatalf("%s = %q, want it to contain %q", what, got, want)
	}
}

// text calls a tool and returns the text of its result, failing the test
// on an error.
func (f *fleet) text(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	res, err := f.call(context.Background(), name, args, nil)
	return text(t, res, err)
}
