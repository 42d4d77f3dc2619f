package mcpbridge_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/mcpbridge"
)

// TestEverythingStdio serves the tools of the reference MCP server
// (@modelcontextprotocol/server-everything, on stdio) on the fleet and
// calls them there: names with the prefix, annotations mapped, text,
// image and structured results, progress as partial results, the server's
// own errors as error results, and a tool that the server adds after the
// connection (its tools/list_changed) served without a restart.
func TestEverythingStdio(t *testing.T) {
	bin := npmBin(t, "mcp-server-everything")
	f := newFleet(t)
	spec, err := mcpbridge.ParseSpec("everything=" + bin + " stdio")
	if err != nil {
		t.Fatal(err)
	}
	spec.Prefix = "ev_"
	b := f.start(t, mcpbridge.Config{Spec: spec, Stderr: discard{}})

	// get-roots-list is registered once the server knows that the client
	// has roots, after initialization, and announced by list_changed.
	bustest.Eventually(t, "ev_get-roots-list served after tools/list_changed", func() bool {
		return contains(b.Served(), "ev_get-roots-list")
	})
	for _, name := range []string{"ev_echo", "ev_get-sum", "ev_trigger-long-running-operation", "ev_get-tiny-image", "ev_get-structured-content"} {
		if !contains(b.Served(), name) {
			t.Fatalf("served %v, want %s among them", b.Served(), name)
		}
	}

	ctx := context.Background()
	if got, want := f.text(t, "ev_echo", map[string]any{"message": "hi fleet"}), "Echo: hi fleet"; got != want {
		t.Errorf("echo = %q, want %q", got, want)
	}
	if got, want := f.text(t, "ev_get-sum", map[string]any{"a": 2, "b": 3}), "The sum of 2 and 3 is 5."; got != want {
		t.Errorf("get-sum = %q, want %q", got, want)
	}

	var mu sync.Mutex
	var partials []map[string]any
	res, err := f.call(ctx, "ev_trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3}, func(p any) {
		if m, ok := p.(map[string]any); ok && m["progress"] != nil {
			mu.Lock()
			partials = append(partials, m)
			mu.Unlock()
		}
	})
	mustContain(t, "long-running result", text(t, res, err), "Long running operation completed")
	mu.Lock()
	// The SDK handles notifications apart from responses: the last one may
	// come after the result, when the call has ended.
	if len(partials) < 2 {
		t.Errorf("progress partials = %v, want 2 or 3", partials)
	}
	for i, p := range partials {
		if got, want := fmt.Sprint(p["progress"], "/", p["total"]), fmt.Sprint(i+1, "/3"); got != want {
			t.Errorf("progress %d = %s, want %s", i, got, want)
		}
	}
	mu.Unlock()

	res, err = f.call(ctx, "ev_get-tiny-image", map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var image *agentfleet.Content
	for i, c := range res.Content {
		if c.Type == agentfleet.ContentImage {
			image = &res.Content[i]
		}
	}
	if image == nil || image.MIMEType != "image/png" || image.Validate() != nil {
		t.Errorf("tiny image result = %+v, want a valid image/png block", res.Content)
	}

	res, err = f.call(ctx, "ev_get-structured-content", map[string]any{"location": "New York"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Details["temperature"] == nil {
		t.Errorf("structured content details = %v, want a temperature", res.Details)
	}

	// The server's own validation error comes back as an error result.
	_, err = f.call(ctx, "ev_get-sum", map[string]any{"a": "two", "b": 3}, nil)
	if err == nil {
		t.Fatal("get-sum with a string argument succeeded")
	}
	mustContain(t, "bad-argument error", err.Error(), "a")
}

// TestEverythingAnnotations checks the mapping of the hints the reference
// server declares: echo says read-only, idempotent, not destructive.
func TestEverythingAnnotations(t *testing.T) {
	bin := npmBin(t, "mcp-server-everything")
	f := newFleet(t)
	spec := mcpbridge.Spec{Name: "everything", Command: []string{bin, "stdio"}}
	served := f.start(t, mcpbridge.Config{Spec: spec, Stderr: discard{}}).Defs()
	var echo *agentfleet.ToolDef
	for i := range served {
		if served[i].Name == "everything_echo" { // namespaced by default
			echo = &served[i]
		}
	}
	if echo == nil {
		t.Fatalf("everything_echo not among %v", served)
	}
	if got, want := echo.Annotations, (agentfleet.Annotations{ReadOnly: true, Idempotent: true}); got != want {
		t.Errorf("echo annotations = %+v, want %+v", got, want)
	}
	if echo.Label != "Echo Tool" || echo.Description != "Echoes back the input string" {
		t.Errorf("echo label, description = %q, %q", echo.Label, echo.Description)
	}
	mustContain(t, "echo schema", string(echo.InputSchema), `"message"`)
}

// TestEverythingHTTP serves the reference server's tools from its
// streamable HTTP mode, and follows it when it is stopped and started
// again: calls fail meanwhile with an error that says so, then work.
func TestEverythingHTTP(t *testing.T) {
	bin := npmBin(t, "mcp-server-everything")
	addr := bustest.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	stop := startHTTPEverything(t, bin, port, addr)
	f := newFleet(t)
	logs := &logBuffer{}
	spec, err := mcpbridge.ParseSpec("web=http://" + addr + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	b := f.start(t, mcpbridge.Config{Spec: spec, Logger: logs.logger(), MinBackoff: 100 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	ctx := context.Background()
	if got, want := f.text(t, "web_echo", map[string]any{"message": "over http"}), "Echo: over http"; got != want {
		t.Errorf("echo = %q, want %q", got, want)
	}

	stop()
	bustest.Eventually(t, "the bridge to notice that the server went away", func() bool { return !b.Connected() })
	_, err = f.call(ctx, "web_echo", map[string]any{"message": "meanwhile"}, nil)
	if err == nil {
		t.Fatal("echo succeeded while the server was down")
	}
	mustContain(t, "error while down", err.Error(), "MCP server web is not connected")

	startHTTPEverything(t, bin, port, addr)
	bustest.Eventually(t, "the bridge to reconnect", b.Connected)
	if got, want := f.text(t, "web_echo", map[string]any{"message": "again"}), "Echo: again"; got != want {
		t.Errorf("echo after reconnect = %q, want %q", got, want)
	}
	mustContain(t, "log", logs.String(), "MCP server went away; reconnecting")
	mustContain(t, "log", logs.String(), "MCP server reconnected")
}

// startHTTPEverything runs the reference server in streamable HTTP mode
// on port and waits until it accepts connections; the returned func
// stops it.
func startHTTPEverything(t *testing.T, bin, port, addr string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
	t.Cleanup(stop)
	bustest.Eventually(t, "server-everything to listen on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return stop
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
