package fleet

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

func TestToolBounds(t *testing.T) {
	nest := func(n int) json.RawMessage {
		return json.RawMessage(strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1))
	}
	for _, tc := range []struct {
		name  string
		def   agentfleet.ToolDef
		bound string // "" when within the bounds
		want  string
	}{
		{"within", agentfleet.ToolDef{Name: "t", Description: strings.Repeat("d", MaxToolDescription), InputSchema: nest(MaxSchemaDepth)}, "", ""},
		{"description", agentfleet.ToolDef{Name: "t", Description: strings.Repeat("d", MaxToolDescription+1)}, "description",
			"tool t: description is 16385 bytes, over the bound of 16384"},
		{"input schema size", agentfleet.ToolDef{Name: "t", InputSchema: json.RawMessage(`"` + strings.Repeat("s", MaxToolSchema) + `"`)}, "input_schema",
			"tool t: input_schema is 65538 bytes, over the bound of 65536"},
		{"output schema size", agentfleet.ToolDef{Name: "t", OutputSchema: json.RawMessage(`"` + strings.Repeat("s", MaxToolSchema) + `"`)}, "output_schema",
			"tool t: output_schema is 65538 bytes, over the bound of 65536"},
		{"input schema depth", agentfleet.ToolDef{Name: "t", InputSchema: nest(MaxSchemaDepth + 1)}, "input_schema depth",
			"tool t: input_schema nests deeper than 32 levels"},
		{"brackets in strings do not nest", agentfleet.ToolDef{Name: "t", InputSchema: json.RawMessage(`{"description":"` + strings.Repeat(`{[\"`, 100) + `"}`)}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ToolBounds{}.Check(&tc.def)
			if tc.bound == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			be, ok := errors.AsType[*BoundError](err)
			if !ok || be.Bound != tc.bound || err.Error() != tc.want {
				t.Fatalf("Check = %v, want the %s bound: %q", err, tc.bound, tc.want)
			}
		})
	}
}

func TestJSONDepth(t *testing.T) {
	for in, want := range map[string]int{
		`1`: 0, `{}`: 1, `[[]]`: 2, `{"a":[{"b":{}}]}`: 4, `"{{{"`: 0, `{"a\"{":[]}`: 2, `[1,[2],[[3]]]`: 3,
	} {
		if got := JSONDepth([]byte(in)); got != want {
			t.Errorf("JSONDepth(%s) = %d, want %d", in, got, want)
		}
	}
}

// TestResolveKinds: a tool name offered by workers of different kinds is
// the highest kind's; the others are refused as conflicts and not counted.
// Different definitions from differently named services of one kind are
// reported, not refused.
func TestResolveKinds(t *testing.T) {
	def := func(desc string) agentfleet.ToolDef { return agentfleet.ToolDef{Name: "echo", Description: desc} }
	mem := func(id, service, kind, desc string) *member {
		return &member{id: id, service: service, version: "1.0.0", kind: kind, concurrency: 4, tools: map[string]agentfleet.ToolDef{"echo": def(desc)}}
	}
	for _, tc := range []struct {
		name      string
		members   []*member
		desc      string
		workers   string
		conflicts []string
	}{
		{"builtin and mcp: builtin kept whichever came first",
			[]*member{mem("A", "mcp-evil", KindMCP, "stolen"), mem("B", "toolworker", KindBuiltin, "echo")},
			"echo", "B", []string{"echo kept toolworker/B (builtin) refused mcp-evil/A (mcp)"}},
		{"scripted over foreign",
			[]*member{mem("A", "scripts", KindScripted, "script"), mem("B", "rogue", KindForeign, "rogue")},
			"script", "A", []string{"echo kept scripts/A (scripted) refused rogue/B (foreign)"}},
		{"builtin over scripted, mcp and foreign at once",
			[]*member{mem("A", "rogue", KindForeign, "x"), mem("B", "mcp-x", KindMCP, "x"), mem("C", "scripts", KindScripted, "x"), mem("D", "toolworker", KindBuiltin, "echo")},
			"echo", "D", []string{
				"echo kept toolworker/D (builtin) refused mcp-x/B (mcp)",
				"echo kept toolworker/D (builtin) refused rogue/A (foreign)",
				"echo kept toolworker/D (builtin) refused scripts/C (scripted)",
			}},
		{"same kind, same definition, two services: no conflict",
			[]*member{mem("A", "w1", KindBuiltin, "echo"), mem("B", "w2", KindBuiltin, "echo")},
			"echo", "A B", nil},
		{"same kind, two services, different definitions: reported, both counted",
			[]*member{mem("A", "w1", KindForeign, "one"), mem("B", "w2", KindForeign, "two")},
			"one", "A B", []string{"echo kept w1/A (foreign) other w2/B (foreign)"}},
		{"rolling upgrade of one service: no conflict",
			[]*member{mem("A", "w", KindBuiltin, "old"), {id: "B", service: "w", version: "1.1.0", kind: KindBuiltin, tools: map[string]agentfleet.ToolDef{"echo": def("new")}}},
			"new", "A B", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := map[string]*member{}
			for _, m := range tc.members {
				ms[m.id] = m
			}
			tools, conflicts := resolve(ms)
			got := tools["echo"]
			if got.Description != tc.desc || strings.Join(got.Workers, " ") != tc.workers {
				t.Errorf("echo = %q served by %v, want %q by %s", got.Description, got.Workers, tc.desc, tc.workers)
			}
			var cs []string
			for _, c := range conflicts {
				verb := "other"
				if c.refused {
					verb = "refused"
				}
				cs = append(cs, c.tool+" kept "+c.kept+" "+verb+" "+c.other)
			}
			if strings.Join(cs, "\n") != strings.Join(tc.conflicts, "\n") {
				t.Errorf("conflicts:\n%s\nwant:\n%s", strings.Join(cs, "\n"), strings.Join(tc.conflicts, "\n"))
			}
		})
	}
}
