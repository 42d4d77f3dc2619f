package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/mcpbridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childEnv makes the test binary an MCP server on stdio with one tool,
// pid, that returns its process id.
const childEnv = "MCPBRIDGE_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		s := mcp.NewServer(&mcp.Implementation{Name: "pid-server", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "pid", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil
			})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var rawObject = json.RawMessage(`{"type":"object"}`)

// TestListChangedAndCancel serves an MCP server written with the Go SDK
// over streamable HTTP: tools it adds and removes appear and vanish on
// the fleet without a restart, a tool whose name is no fleet name is left
// out with a log line that names it, and a fleet call canceled by its
// caller cancels the MCP request on the server.
func TestListChangedAndCancel(t *testing.T) {
	canceled := make(chan error, 1)
	started := make(chan struct{}, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: rawObject}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		canceled <- ctx.Err()
		return nil, ctx.Err()
	})
	srv.AddTool(&mcp.Tool{Name: "a.b", InputSchema: rawObject}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	f := newFleet(t)
	logs := &logBuffer{}
	b := f.start(t, mcpbridge.Config{Spec: mcpbridge.Spec{Name: "gosdk", URL: hs.URL, Prefix: "g_"}, Logger: logs.logger()})
	if got := b.Served(); len(got) != 1 || got[0] != "g_block" {
		t.Fatalf("served %v, want [g_block]", got)
	}
	mustContain(t, "log", logs.String(), `MCP tool \"a.b\": tool name \"g_a.b\" may hold only letters, digits, '-' and '_'`)

	srv.AddTool(&mcp.Tool{Name: "extra", Description: "added later", InputSchema: rawObject}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "extra ran"}}}, nil
	})
	bustest.Eventually(t, "g_extra served", func() bool { return contains(b.Served(), "g_extra") })
	bustest.Eventually(t, "g_extra callable", func() bool {
		res, err := f.call(context.Background(), "g_extra", nil, nil)
		return err == nil && text(t, res, err) == "extra ran"
	})
	srv.RemoveTools("extra")
	bustest.Eventually(t, "g_extra gone", func() bool { return !contains(b.Served(), "g_extra") })

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := f.call(ctx, "g_block", nil, nil)
		errc <- err
	}()
	<-started
	cancel()
	select {
	case err := <-canceled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("server handler ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the MCP server's handler was not canceled")
	}
	if err := <-errc; err == nil {
		t.Error("canceled call succeeded")
	}
}

// TestStdioRestart kills a stdio MCP server: the bridge says so in the
// log and in the calls' errors, and starts the server again.
func TestStdioRestart(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(childEnv, "1")
	f := newFleet(t)
	logs := &logBuffer{}
	b := f.start(t, mcpbridge.Config{Spec: mcpbridge.Spec{Name: "child", Command: []string{exe}},
		Logger: logs.logger(), MinBackoff: 300 * time.Millisecond, MaxBackoff: time.Second})
	first := f.text(t, "child_pid", nil)
	pid, err := strconv.Atoi(first)
	if err != nil {
		t.Fatalf("pid = %q", first)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the bridge to notice that the server died", func() bool { return !b.Connected() })
	_, err = f.call(context.Background(), "child_pid", nil, nil)
	if err == nil {
		t.Fatal("pid succeeded while the server was down")
	}
	mustContain(t, "error while down", err.Error(), "MCP server child is not connected")
	bustest.Eventually(t, "the server started again", b.Connected)
	if second := f.text(t, "child_pid", nil); second == first {
		t.Errorf("pid after restart = %s, the same process", second)
	}
	mustContain(t, "log", logs.String(), "MCP server went away; reconnecting")
	mustContain(t, "log", logs.String(), "MCP server reconnected")
}

// TestStartFails: a command that does not exist fails the start with an
// error that names the server and the command.
func TestStartFails(t *testing.T) {
	f := newFleet(t)
	_, err := mcpbridge.Start(context.Background(), f.host, mcpbridge.Config{Spec: mcpbridge.Spec{Name: "nope", Command: []string{"/nonexistent/mcp-server"}}, Logger: quiet()})
	if err == nil {
		t.Fatal("start succeeded")
	}
	mustContain(t, "error", err.Error(), `mcp server nope: start ["/nonexistent/mcp-server"]`)
}

// TestClaims: two MCP servers of one worker with a tool of the same name,
// both unprefixed: the second does not serve it and says so; with a
// prefix it does.
func TestClaims(t *testing.T) {
	newServer := func() *httptest.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "same", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "lookup", InputSchema: rawObject}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		t.Cleanup(hs.Close)
		return hs
	}
	a, b := newServer(), newServer()
	f := newFleet(t)
	claims := &mcpbridge.Claims{}
	logs := &logBuffer{}
	first := f.start(t, mcpbridge.Config{Spec: mcpbridge.Spec{Name: "a", URL: a.URL, Unprefixed: true}, Claims: claims, Logger: logs.logger()})
	second := f.start(t, mcpbridge.Config{Spec: mcpbridge.Spec{Name: "b", URL: b.URL, Unprefixed: true}, Claims: claims, Logger: logs.logger()})
	if got := first.Served(); len(got) != 1 || got[0] != "lookup" {
		t.Errorf("a serves %v, want [lookup]", got)
	}
	if got := second.Served(); len(got) != 0 {
		t.Errorf("b serves %v, want nothing", got)
	}
	mustContain(t, "log", logs.String(), "MCP tool not served: MCP server a of this worker serves a tool of that name; give one of them --mcp-prefix")
	third := f.start(t, mcpbridge.Config{Spec: mcpbridge.Spec{Name: "c", URL: b.URL, Prefix: "c_"}, Claims: claims, Logger: quiet()})
	if got := third.Served(); len(got) != 1 || got[0] != "c_lookup" {
		t.Errorf("c serves %v, want [c_lookup]", got)
	}
}

// TestSeveralWorkers: two workers serve the same MCP server, each with
// its own session, and the fleet spreads the calls over both.
func TestSeveralWorkers(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "shared", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: rawObject}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Session.ID()}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	s := bustest.MustRunNATS(t)
	spec := mcpbridge.Spec{Name: "shared", URL: hs.URL}
	for range 2 {
		nc := bustest.MustConnect(t, s)
		w := &fleet{nc: nc, host: natsHost{nc}}
		w.start(t, mcpbridge.Config{Spec: spec})
	}
	f := newFleetOn(t, s)
	workers, sessions := map[string]bool{}, map[string]bool{}
	for i := 0; i < 40 && (len(workers) < 2 || len(sessions) < 2); i++ {
		res, err := f.call(context.Background(), "shared_whoami", nil, nil)
		sessions[text(t, res, err)] = true
		workers[res.Worker] = true
	}
	if len(workers) != 2 || len(sessions) != 2 {
		t.Errorf("40 calls reached workers %v and MCP sessions %v, want two of each", workers, sessions)
	}
}
