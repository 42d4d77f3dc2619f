package mcpbridge_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/mcpbridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     mcpbridge.Spec
		err      string
	}{
		{name: "stdio", in: "fs=npx -y @modelcontextprotocol/server-filesystem /tmp", want: mcpbridge.Spec{Name: "fs", Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"}}},
		{name: "quoted", in: `x=prog "an arg" 'b c' ""`, want: mcpbridge.Spec{Name: "x", Command: []string{"prog", "an arg", "b c", ""}}},
		{name: "http", in: "web=http://127.0.0.1:3001/mcp", want: mcpbridge.Spec{Name: "web", URL: "http://127.0.0.1:3001/mcp"}},
		{name: "no equals", in: "npx server", err: `--mcp "npx server": want NAME=COMMAND ARGS… or NAME=URL`},
		{name: "empty name", in: "=npx", err: `want NAME=COMMAND`},
		{name: "bad name", in: "my.fs=npx", err: `--mcp "my.fs=npx": MCP server name "my.fs" may hold only letters, digits, '-' and '_'`},
		{name: "no command", in: "fs=", err: `--mcp "fs=": no command or URL after "fs="`},
		{name: "unclosed quote", in: `fs=prog "a b`, err: `--mcp "fs=prog \"a b": unclosed " at column 6 of the command`},
		{name: "no host", in: "web=http:///mcp", err: `URL "http:///mcp" has no host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mcpbridge.ParseSpec(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseSpec(%q) error = %v, want it to contain %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseSpec(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParsePrefix(t *testing.T) {
	if n, p, err := mcpbridge.ParsePrefix("fs=fs_"); err != nil || n != "fs" || p != "fs_" {
		t.Errorf("ParsePrefix(fs=fs_) = %q, %q, %v", n, p, err)
	}
	if n, p, err := mcpbridge.ParsePrefix("fs="); err != nil || n != "fs" || p != "" {
		t.Errorf("ParsePrefix(fs=) = %q, %q, %v, want fs and no prefix", n, p, err)
	}
	if _, _, err := mcpbridge.ParsePrefix("=x_"); err == nil || !strings.Contains(err.Error(), `--mcp-prefix "=x_": want NAME=PREFIX`) {
		t.Errorf("ParsePrefix(=x_) error = %v", err)
	}
	if _, _, err := mcpbridge.ParsePrefix("fs=a.b"); err == nil || !strings.Contains(err.Error(), `--mcp-prefix "fs=a.b": tool name prefix name "a.b" may hold only`) {
		t.Errorf("ParsePrefix(fs=a.b) error = %v", err)
	}
}

func TestToolPrefix(t *testing.T) {
	for _, tc := range []struct {
		spec mcpbridge.Spec
		want string
	}{
		{mcpbridge.Spec{Name: "fs"}, "fs_"},
		{mcpbridge.Spec{Name: "fs", Prefix: "files_"}, "files_"},
		{mcpbridge.Spec{Name: "fs", Prefix: "files_", Unprefixed: true}, ""},
		{mcpbridge.Spec{Name: "fs", Unprefixed: true}, ""},
	} {
		if got := tc.spec.ToolPrefix(); got != tc.want {
			t.Errorf("%+v.ToolPrefix() = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestAnnotations(t *testing.T) {
	f, tr := false, true
	for _, tc := range []struct {
		name string
		in   *mcp.ToolAnnotations
		want agentfleet.Annotations
	}{
		{"none: MCP defaults, destructive", nil, agentfleet.Annotations{Destructive: true}},
		{"empty: destructive", &mcp.ToolAnnotations{}, agentfleet.Annotations{Destructive: true}},
		{"read-only", &mcp.ToolAnnotations{ReadOnlyHint: true}, agentfleet.Annotations{ReadOnly: true}},
		{"not destructive", &mcp.ToolAnnotations{DestructiveHint: &f, IdempotentHint: true}, agentfleet.Annotations{Idempotent: true}},
		{"destructive", &mcp.ToolAnnotations{DestructiveHint: &tr}, agentfleet.Annotations{Destructive: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mcpbridge.Annotations(tc.in); got != tc.want {
				t.Errorf("Annotations(%+v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestToolDefErrors(t *testing.T) {
	_, err := mcpbridge.ToolDef("", &mcp.Tool{Name: "x", InputSchema: map[string]any{"type": 5}})
	if err == nil || !strings.Contains(err.Error(), `MCP tool "x"`) {
		t.Errorf("bad schema error = %v", err)
	}
	d, err := mcpbridge.ToolDef("p_", &mcp.Tool{Name: "x"})
	if err != nil || d.Name != "p_x" || string(d.InputSchema) != `{"type":"object"}` {
		t.Errorf("ToolDef without schema = %+v, %v", d, err)
	}
}
