package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

func TestMCPFlags(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"--mcp npx", `invalid value "npx" for flag -mcp: --mcp "npx": want NAME=COMMAND ARGS… or NAME=URL`},
		{"--mcp a.b=npx", `MCP server name "a.b" may hold only letters, digits, '-' and '_'`},
		{"--mcp fs=x --mcp fs=y", `--mcp "fs=y": a server named fs is already given`},
		{"--mcp fs=x --mcp-prefix web=w_", "--mcp-prefix web=w_: no --mcp server is named web"},
		{"--mcp fs=x --mcp-prefix fs", `--mcp-prefix "fs": want NAME=PREFIX`},
		{"--mcp fs=x --mcp-timeout -1s", "--mcp-timeout -1s: must not be negative"},
	} {
		t.Run(tt.args, func(t *testing.T) {
			m := NewMain()
			m.Stderr = new(strings.Builder)
			err := m.ParseFlags(strings.Fields(tt.args))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestMCPPrefixFlags: the tools of an MCP server are namespaced as
// NAME_<tool> unless --mcp-prefix says otherwise; NAME= asks for none.
func TestMCPPrefixFlags(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"--mcp fs=x", "fs_"},
		{"--mcp fs=x --mcp-prefix fs=files_", "files_"},
		{"--mcp fs=x --mcp-prefix fs=", ""},
	} {
		t.Run(tt.args, func(t *testing.T) {
			m := NewMain()
			m.Stderr = new(strings.Builder)
			if err := m.ParseFlags(strings.Fields(tt.args)); err != nil {
				t.Fatal(err)
			}
			if got := m.MCP[0].ToolPrefix(); got != tt.want {
				t.Errorf("tool prefix = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMCPWorker runs the toolworker program with --mcp on the reference
// MCP server: its tools, with the prefix, are the worker's only ones.
func TestMCPWorker(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed, so the MCP worker is not tested")
	}
	bin, _ := filepath.Abs("../../internal/mcpbridge/testdata/npm/node_modules/.bin/mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		t.Skip("server-everything is not installed: run (cd internal/mcpbridge/testdata/npm && npm ci --no-audit --no-fund)")
	}
	s := bustest.MustRunNATS(t)
	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--nats-url", s.ClientURL(), "--log-level", "warn", "--mcp", "ev=" + bin + " stdio", "--mcp-prefix", "ev=ev_", "--mcp-timeout", "2m"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if m.server.ToolServer != nil {
		t.Error("built-in tools served with --mcp and no --tools")
	}
	for _, d := range mcpbridgeDefs(m) {
		if d.TimeoutMS != 120000 {
			t.Errorf("%s timeout_ms = %d, want 120000 (--mcp-timeout 2m)", d.Name, d.TimeoutMS)
		}
	}
	c, err := toolrpc.NewToolClient(bustest.MustConnect(t, s), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	args := map[string]any{"message": "from toolworker"}
	res, err := fleetexec.Executor{Client: c}.Execute(context.Background(), &pipeline.Prepared{
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "ev_echo"}},
		Call: agentfleet.ToolCall{ID: "c1", Name: "ev_echo", Arguments: args}, Args: args, Timeout: 20 * time.Second,
	}, func(any) {})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := agentfleet.JoinText(res.Content), "Echo: from toolworker"; got != want {
		t.Errorf("ev_echo = %q, want %q", got, want)
	}
}

// mcpbridgeDefs returns the definitions the worker's MCP tools announce.
func mcpbridgeDefs(m *Main) []agentfleet.ToolDef {
	var out []agentfleet.ToolDef
	for _, b := range m.server.MCP {
		out = append(out, b.Defs()...)
	}
	return out
}
