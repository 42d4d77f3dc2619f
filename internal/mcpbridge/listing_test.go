package mcpbridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestAdmit(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	tool := func(name, desc string) *mcp.Tool { return &mcp.Tool{Name: name, Description: desc, InputSchema: obj} }
	lim := Limits{InfoBytes: 4096}.withDefaults(0)
	for _, tc := range []struct {
		name    string
		prefix  string
		listed  []*mcp.Tool
		more    bool
		kept    string
		refused string
	}{
		{"prefixed", "s_", []*mcp.Tool{tool("echo", ""), tool("ok", "")}, false, "s_echo s_ok", ""},
		{"reserved name refused, unprefixed", "", []*mcp.Tool{tool("echo", ""), tool("ok", "")}, false, "ok",
			`echo: MCP tool "echo": echo is the name of a fleet tool (built-in or of this worker)`},
		{"listed twice", "s_", []*mcp.Tool{tool("ok", "a"), tool("ok", "b")}, false, "s_ok", `ok: MCP tool "ok": the server lists it twice`},
		{"no subject token", "s_", []*mcp.Tool{tool("a.b", ""), tool("ok", "")}, false, "s_ok", `a.b: MCP tool "a.b": tool name "s_a.b" may hold only`},
		{"description over its bound", "s_", []*mcp.Tool{tool("big", strings.Repeat("d", 16<<10+1)), tool("ok", "")}, false, "s_ok",
			`big [description]: MCP tool "big": tool s_big: description is 16385 bytes, over the bound of 16384`},
		{"schema does not compile", "s_", []*mcp.Tool{{Name: "bad", InputSchema: json.RawMessage(`{"type":5}`)}, tool("ok", "")}, false, "s_ok", `bad: MCP tool "bad": `},
		{"service info full", "s_", []*mcp.Tool{tool("a", strings.Repeat("a", 2000)), tool("b", strings.Repeat("b", 2000)), tool("c", "")}, false, "s_a s_c",
			`b [service info]: MCP tool "b": its 2`},
		{"more than listed", "s_", []*mcp.Tool{tool("ok", "")}, true, "s_ok", ` [tool count]: the server lists more than 256 tools`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, refused, err := admit(context.Background(), tc.prefix, tc.listed, tc.more, lim, map[string]bool{"echo": true}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var names, why []string
			for _, a := range kept {
				names = append(names, a.def.Name)
			}
			for _, r := range refused {
				s := r.tool
				if r.bound != "" {
					s += " [" + r.bound + "]"
				}
				why = append(why, s+": "+r.err.Error())
			}
			if got := strings.Join(names, " "); got != tc.kept {
				t.Errorf("kept %q, want %q", got, tc.kept)
			}
			if got := strings.Join(why, "\n"); (tc.refused == "") != (got == "") || !strings.Contains(got, tc.refused) {
				t.Errorf("refused %q, want %q", got, tc.refused)
			}
		})
	}
}

func TestAdmitStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	listed := []*mcp.Tool{{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	_, _, err := admit(ctx, "", listed, false, Limits{}.withDefaults(0), nil, 0)
	if err == nil || !strings.Contains(err.Error(), "tools/list: context canceled") {
		t.Errorf("err = %v, want tools/list: context canceled", err)
	}
}
