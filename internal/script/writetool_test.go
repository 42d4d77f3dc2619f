package script

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/tools"
)

func TestDryRun(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(d *Definition)
		want       string // "" for success
		incomplete bool
	}{
		{"ok", func(d *Definition) {}, "", false},
		{"check fails", func(d *Definition) { d.Code = "def execute(args):\n    return nope\n" }, "code:2:12: undefined: nope", false},
		{"runtime error", func(d *Definition) { d.Code = "def execute(args):\n    return args['units'].upper()\n" },
			`weather: the dry run of execute with the sample arguments {"city":"sample"} failed: code:2:16: key "units" not in dict`, false},
		{"infinite loop", func(d *Definition) { d.Code = "def execute(args):\n    while True:\n        pass\n" },
			"failed: script exceeded its limit of 10000 execution steps", false},
		{"fail is a note", func(d *Definition) { d.Code = "def execute(args):\n    fail('unknown city', args['city'])\n" },
			`execute called fail() with the sample arguments {"city":"sample"}: unknown city sample`, true},
		{"validate rejects", func(d *Definition) {
			d.ValidateCode = "def validate(args):\n    if args['city'] != 'Oslo':\n        return 'only Oslo'\n"
		}, "validate rejected the sample arguments", true},
		{"validate crashes", func(d *Definition) { d.ValidateCode = "def validate(args):\n    return args['x']\n" },
			`dry run of validate with the sample arguments {"city":"sample"} failed: validate_code:2:16: key "x" not in dict`, false},
		{"prepare feeds execute", func(d *Definition) {
			d.PrepareCode = "def prepare(args):\n    args['units'] = 'metric'\n    return args\n"
			d.Code = "def execute(args):\n    return args['units'].upper()\n"
		}, "", false},
		{"call_tool placeholder", func(d *Definition) {
			d.Code = "def execute(args):\n    return call_tool('get_weather', {'city': args['city']})\n"
		}, "", false},
		{"error after placeholder is a note", func(d *Definition) {
			d.Code = "def execute(args):\n    t = call_tool('get_temp', {'city': args['city']})\n    return str(int(t) + 1)\n"
		}, `failed after call_tool returned its dry-run placeholder`, true},
		{"sample not valid", func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","pattern":"^[0-9]{4}$"}},"required":["code"]}`)
		}, "do not satisfy it", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := def("weather", "def execute(args):\n    return 'Weather in ' + args['city']\n")
			tt.mutate(d)
			err := DryRun(context.Background(), d, Env{MaxSteps: 10000})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("DryRun: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DryRun: %v\nwant it to contain %q", err, tt.want)
			}
			if got := errors.Is(err, ErrDryRunIncomplete); got != tt.incomplete {
				t.Fatalf("errors.Is(err, ErrDryRunIncomplete) = %v, want %v", got, tt.incomplete)
			}
		})
	}

	// The dry run never calls a tool.
	called := false
	env := Env{CallTool: func(context.Context, *agentfleet.ToolCall) (*agentfleet.ToolResult, error) {
		called = true
		return agentfleet.TextResult("real"), nil
	}}
	d := def("weather", "def execute(args):\n    r = call_tool('rm_rf', {}, full=True)\n    if r['text'] != '(dry run: rm_rf not called)':\n        fail('got ' + r['text'])\n    return r['text']\n")
	if err := DryRun(context.Background(), d, env); err != nil || called {
		t.Fatalf("DryRun: %v, called %v", err, called)
	}
}

func TestWriteTool(t *testing.T) {
	ctx := context.Background()
	store := NewMemoryStore()
	fleetDefs := []agentfleet.ToolDef{{Name: "get_time", Label: "Time Lookup", Description: "Get current local time"}}
	fleetFn := func() []agentfleet.ToolDef { return fleetDefs }
	wt := WriteTool(store, fleetFn, LocalDryRun(Env{}))
	dt := DeleteTool(store, fleetFn)
	if _, err := tools.CompileSchema(wt.InputSchema); err != nil {
		t.Fatalf("write_tool schema: %v", err)
	}

	write := func(args map[string]any) (*agentfleet.ToolResult, error) {
		t.Helper()
		// As the pipeline does: the schema first.
		s, err := tools.CompileSchema(wt.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(args); err != nil {
			t.Fatalf("write_tool arguments: %v", err)
		}
		return wt.Handler.Call(ctx, &agentfleet.Call{ID: "w", Name: WriteToolName, Arguments: args, Progress: func(any) {}})
	}
	args := func(name, code string, extra map[string]any) map[string]any {
		m := map[string]any{
			"name": name, "label": "Wine Search", "description": "Search a wine database",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []any{"query"}},
			"code":         code,
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	const v1 = "def execute(args):\n    return 'Found 5 %s wines' % args['query']\n"
	const v2 = "def execute(args):\n    return 'Found 6 %s wines' % args['query']\n"

	res, err := write(args("searchWine", v1, map[string]any{"annotations": map[string]any{"read_only": true}, "parallel": true}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Content[0].Text, "Tool searchWine written (revision 1); it is available to the fleet within a second."; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	stored, err := store.Get(ctx, "searchWine")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Code != v1 || !stored.Annotations.ReadOnly || !stored.Parallel || stored.Replace {
		t.Fatalf("stored %+v", stored)
	}

	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"collision with a fleet tool", args("get_time", v1, nil), "write_tool: a tool named get_time already exists (Time Lookup: Get current local time) and is not a scripted tool, so it cannot be replaced; choose another name"},
		{"replace cannot take a fleet tool", args("get_time", v1, map[string]any{"replace": true}), "is not a scripted tool"},
		{"reserved", args("list_tools", v1, nil), "the name list_tools is taken by a tool of the orchestrator"},
		{"exists without replace", args("searchWine", v2, nil), "a scripted tool named searchWine already exists (revision 1: Wine Search: Search a wine database); set replace to true"},
		{"syntax error", args("other", "def execute(args):\n    return (\n", nil), "tool other: code:3:1: syntax error"},
		{"dry run fails", args("other", "def execute(args):\n    return args['q']\n", nil), `the dry run of execute with the sample arguments {"query":"sample"} failed: code:2:16: key "q" not in dict`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := write(tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("write_tool: %v\nwant it to contain %q", err, tt.want)
			}
		})
	}

	res, err = write(args("searchWine", v2, map[string]any{"replace": true}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Content[0].Text, "Tool searchWine written (revision 2); it is available to the fleet within a second."; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	if res.Details["replaced"] != true {
		t.Fatalf("details %v", res.Details)
	}

	// A note from the dry run is passed on.
	res, err = write(args("picky", "def execute(args):\n    fail('no wine called', args['query'])\n", nil))
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].Text; !strings.Contains(text, "written (revision 3)") || !strings.Contains(text, "\nNote: the dry run could not exercise the whole script: execute called fail()") {
		t.Fatalf("text %q", text)
	}

	del := func(name string) (*agentfleet.ToolResult, error) {
		return dt.Handler.Call(ctx, &agentfleet.Call{ID: "d", Name: DeleteToolName, Arguments: map[string]any{"name": name}, Progress: func(any) {}})
	}
	if _, err := del("get_time"); err == nil || !strings.Contains(err.Error(), "delete_tool: tool get_time (Time Lookup: Get current local time) is not a scripted tool") {
		t.Fatalf("delete_tool get_time: %v", err)
	}
	if _, err := del("nothing"); err == nil || err.Error() != "delete_tool: there is no scripted tool named nothing" {
		t.Fatalf("delete_tool nothing: %v", err)
	}
	res, err = del("searchWine")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Content[0].Text, "Tool searchWine deleted (its last revision was 2); the fleet stops serving it within a second."; got != want {
		t.Fatalf("text %q, want %q", got, want)
	}
	if _, err := store.Get(ctx, "searchWine"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after delete: %v", err)
	}
	// Written again after delete, without replace.
	if _, err := write(args("searchWine", v1, nil)); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeDefinition(t *testing.T) {
	d, err := DecodeDefinition(map[string]any{"name": "x", "input_schema": `{"type":"object"}`, "code": "c", "revision": 9.0})
	if err != nil {
		t.Fatal(err)
	}
	if string(d.InputSchema) != `{"type":"object"}` || d.Revision != 0 {
		t.Fatalf("%+v", d)
	}
	if _, err := DecodeDefinition(map[string]any{"input_schema": "{"}); err == nil || !strings.Contains(err.Error(), "input_schema is a string that is not JSON") {
		t.Fatalf("err %v", err)
	}
}

// TestWriteToolOverADeletedScriptedTool: a scripted tool just deleted
// from the store is still served until its workers' next beat; its name is
// free to write again, while a tool that is not scripted keeps its name.
func TestWriteToolOverADeletedScriptedTool(t *testing.T) {
	store := NewMemoryStore()
	fleet := func() []agentfleet.ToolDef {
		return []agentfleet.ToolDef{{Name: "gone", Label: "Gone", Scripted: true}, {Name: "builtin", Label: "Builtin"}}
	}
	def := func(name string) *Definition {
		return &Definition{Name: name, Label: "Again", Description: "written again",
			InputSchema: json.RawMessage(`{"type":"object"}`), Code: "def execute(args):\n    return 'ok'\n"}
	}
	if _, err := Write(t.Context(), store, fleet, LocalDryRun(Env{}), def("gone")); err != nil {
		t.Errorf("Write over a deleted scripted tool still served: %v, want it written", err)
	}
	if _, err := Write(t.Context(), store, fleet, LocalDryRun(Env{}), def("builtin")); err == nil || !strings.Contains(err.Error(), "is not a scripted tool") {
		t.Errorf("Write over a tool that is not scripted: %v, want it refused", err)
	}
}
