package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

const objSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

func def(name, code string) *Definition {
	return &Definition{Name: name, Label: name, Description: "test tool " + name, InputSchema: json.RawMessage(objSchema), Code: code}
}

func mustNew(t *testing.T, d *Definition, env Env) *agentfleet.Tool {
	t.Helper()
	tool, err := New(d, env)
	if err != nil {
		t.Fatalf("New(%s): %v", d.Name, err)
	}
	return tool
}

func callTool(t *testing.T, tool *agentfleet.Tool, args map[string]any) (*agentfleet.ToolResult, error) {
	t.Helper()
	return tool.Handler.Call(context.Background(), &agentfleet.Call{ID: "call_1", Name: tool.Name, Arguments: args, Progress: func(any) {}})
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(d *Definition)
		want   string // substring of the error; "" means no error
	}{
		{"ok", func(d *Definition) {}, ""},
		{"bad name", func(d *Definition) { d.Name = "get weather" }, `name "get weather" may hold only letters, digits`},
		{"empty name", func(d *Definition) { d.Name = "" }, "name is empty"},
		{"no description", func(d *Definition) { d.Description = " " }, "description is empty"},
		{"no schema", func(d *Definition) { d.InputSchema = nil }, "input_schema is missing"},
		{"schema not object", func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":"string"}`) }, `"type" is "string", want "object"`},
		{"schema bad JSON", func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":`) }, "input schema is not valid JSON"},
		{"schema does not compile", func(d *Definition) {
			d.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"nope"}}}`)
		}, "input schema"},
		{"undefined name", func(d *Definition) { d.Code = "def execute(args):\n    x = 1\n    return foo\n" }, "code:3:12: undefined: foo"},
		{"syntax error", func(d *Definition) { d.Code = "def execute(args)\n    return 1\n" }, "code:2:1: syntax error: got newline, want ':'"},
		{"no execute", func(d *Definition) { d.Code = "def run(args):\n    return 1\n" }, "code does not define execute(args)"},
		{"execute not a function", func(d *Definition) { d.Code = "execute = 3\n" }, "execute is a int, want a function"},
		{"execute without params", func(d *Definition) { d.Code = "def execute():\n    return 1\n" }, "code: code:1:1: execute takes no parameter"},
		{"execute two params", func(d *Definition) { d.Code = "def execute(args, more):\n    return 1\n" }, "parameter more has no default"},
		{"top-level error", func(d *Definition) { d.Code = "x = {}['k']\ndef execute(args):\n    return 1\n" }, `code: top-level code failed: code:1:7: key "k" not in dict`},
		{"load", func(d *Definition) { d.Code = "load(\"x.star\", \"y\")\ndef execute(args):\n    return y\n" }, "code:1:6: load is not available"},
		{"validate undefined", func(d *Definition) { d.ValidateCode = "def validate(args):\n    return bar\n" }, "validate_code:2:12: undefined: bar"},
		{"no validate", func(d *Definition) { d.ValidateCode = "def check(args):\n    return None\n" }, "validate_code does not define validate(args)"},
		{"no prepare", func(d *Definition) { d.PrepareCode = "x = 1\n" }, "prepare_code does not define prepare(args)"},
		{"recursion", func(d *Definition) {
			d.Code = "def f(n):\n    return f(n)\nf(1)\ndef execute(args):\n    return 1\n"
		}, "function f called recursively"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := def("weather", "def execute(args):\n    return 'ok'\n")
			tt.mutate(d)
			err := Check(d)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Check: no error, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Check: %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestSandboxHasNoWayOut(t *testing.T) {
	for _, name := range []string{"open", "os", "http", "socket", "exec", "subprocess", "getenv", "environ", "__import__", "eval", "file", "io", "sys", "net"} {
		t.Run(name, func(t *testing.T) {
			d := def("escape", fmt.Sprintf("def execute(args):\n    return str(%s)\n", name))
			err := Check(d)
			if err == nil || !strings.Contains(err.Error(), "code:2:16: undefined: "+name) {
				t.Fatalf("Check: %v, want undefined: %s", err, name)
			}
		})
	}
	t.Run("import statement", func(t *testing.T) {
		err := Check(def("escape", "import os\ndef execute(args):\n    return 1\n"))
		if err == nil || !strings.Contains(err.Error(), "code:1:1: syntax error") {
			t.Fatalf("Check: %v, want a syntax error at 1:1", err)
		}
	})
	t.Run("load at run time", func(t *testing.T) {
		// Check refuses load statements; the thread's Load refuses too,
		// should one ever run.
		if _, err := noLoad(nil, "x.star"); err == nil || !strings.Contains(err.Error(), `cannot load "x.star"`) {
			t.Fatalf("noLoad: %v", err)
		}
		_, err := New(def("escape", "load('x.star', 'y')\ndef execute(args):\n    return y\n"), Env{})
		if err == nil || !strings.Contains(err.Error(), "load is not available") {
			t.Fatalf("New: %v", err)
		}
	})
	t.Run("print goes nowhere by default", func(t *testing.T) {
		var got []string
		var mu sync.Mutex
		tool := mustNew(t, def("printer", "def execute(args):\n    print('hello', args['city'])\n    return 'ok'\n"), Env{Print: func(tool, msg string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, tool+": "+msg)
		}})
		if _, err := callTool(t, tool, map[string]any{"city": "Oslo"}); err != nil {
			t.Fatal(err)
		}
		if want := []string{"printer: hello Oslo"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("printed %q, want %q", got, want)
		}
	})
}

func TestExecuteResults(t *testing.T) {
	tests := []struct {
		name    string
		code    string
		want    *agentfleet.ToolResult
		wantErr string
	}{
		{
			name: "string",
			code: "def execute(args):\n    return 'Weather in %s: sunny' % args['city']\n",
			want: agentfleet.TextResult("Weather in Oslo: sunny"),
		},
		{
			name: "dict with string content",
			code: "def execute(args):\n    return {'content': 'hi', 'details': {'n': 3, 'f': 1.5, 'l': [1, 'a', None], 'ok': True}, 'terminate': True}\n",
			want: &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text("hi")}, Details: map[string]any{"n": int64(3), "f": 1.5, "l": []any{int64(1), "a", nil}, "ok": true}, Terminate: true},
		},
		{
			name: "content blocks",
			code: "def execute(args):\n    return {'content': [{'type': 'text', 'text': 'a'}, 'b', {'type': 'image', 'data': 'aGk=', 'mime_type': 'image/png'}]}\n",
			want: &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text("a"), agentfleet.Text("b"), agentfleet.Image("aGk=", "image/png")}},
		},
		{
			name: "big int becomes float",
			code: "def execute(args):\n    return {'content': 'x', 'details': {'big': 1 << 70}}\n",
			want: &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text("x")}, Details: map[string]any{"big": float64(1 << 70)}},
		},
		{name: "json and math", code: "def execute(args):\n    return json.encode({'r': math.sqrt(16), 'x': json.decode('[1,2]')})\n", want: agentfleet.TextResult(`{"r":4.0,"x":[1,2]}`)},
		{name: "none", code: "def execute(args):\n    pass\n", wantErr: "weather: execute returned None"},
		{name: "int", code: "def execute(args):\n    return 3\n", wantErr: "execute returned a int"},
		{name: "unknown key", code: "def execute(args):\n    return {'text': 'x'}\n", wantErr: `execute returned a dict with key "text"`},
		{name: "bad block", code: "def execute(args):\n    return {'content': [{'type': 'video'}]}\n", wantErr: `content[0]: content block type "video" is not one of text, image`},
		{name: "details not dict", code: "def execute(args):\n    return {'content': 'x', 'details': [1]}\n", wantErr: `"details" of type list; give a dict`},
		{name: "non-string key", code: "def execute(args):\n    return {'content': 'x', 'details': {1: 2}}\n", wantErr: "dict key 1 is a int; keys must be strings"},
		{name: "function value", code: "def execute(args):\n    return {'content': 'x', 'details': {'f': execute}}\n", wantErr: `"f": a function value has no JSON form`},
		{name: "fail", code: "def execute(args):\n    fail('no weather for', args['city'])\n", wantErr: "weather: no weather for Oslo"},
		{
			name:    "runtime error with backtrace",
			code:    "def helper(d):\n    return d['missing']\n\ndef execute(args):\n    return helper(args)\n",
			wantErr: `weather: code:2:13: key "missing" not in dict (backtrace: code:5:18 in execute, code:2:13 in helper)`,
		},
		{name: "frozen globals", code: "cache = {}\ndef execute(args):\n    cache['x'] = 1\n    return 'x'\n", wantErr: "cannot insert into frozen hash table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := mustNew(t, def("weather", tt.code), Env{})
			res, err := callTool(t, tool, map[string]any{"city": "Oslo"})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res, tt.want) {
				t.Fatalf("result\n%#v\nwant\n%#v", res, tt.want)
			}
		})
	}
}

func TestArgumentsConversion(t *testing.T) {
	tool := mustNew(t, &Definition{
		Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: "def execute(args):\n    return {'content': '%d %s' % (args['n'] + 1, type(args['f'])), 'details': args}\n",
	}, Env{})
	args := map[string]any{"n": float64(41), "f": 2.5, "s": "x", "b": true, "z": nil, "l": []any{1, "a"}, "m": map[string]any{"k": []string{"v"}}}
	res, err := callTool(t, tool, args)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Content[0].Text, "42 float"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	want := map[string]any{"n": int64(41), "f": 2.5, "s": "x", "b": true, "z": nil, "l": []any{int64(1), "a"}, "m": map[string]any{"k": []any{"v"}}}
	if !reflect.DeepEqual(res.Details, want) {
		t.Errorf("details %#v, want %#v", res.Details, want)
	}
}

func TestLimits(t *testing.T) {
	t.Run("steps stop an infinite loop", func(t *testing.T) {
		tool := mustNew(t, def("spin", "def execute(args):\n    n = 0\n    while True:\n        n += 1\n"), Env{MaxSteps: 100_000})
		_, err := callTool(t, tool, map[string]any{"city": "x"})
		var se *Error
		if !errors.As(err, &se) || se.Kind != ErrSteps {
			t.Fatalf("error %v, want a step limit error", err)
		}
		if got, want := err.Error(), "spin: script exceeded its limit of 100000 execution steps"; !strings.HasPrefix(got, want) {
			t.Fatalf("error %q, want %q", got, want)
		}
	})
	t.Run("default steps", func(t *testing.T) {
		tool := mustNew(t, def("spin", "def execute(args):\n    for i in range(1 << 40):\n        pass\n"), Env{Timeout: time.Minute})
		_, err := callTool(t, tool, map[string]any{"city": "x"})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("limit of %d execution steps", DefaultMaxSteps)) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("wall time", func(t *testing.T) {
		tool := mustNew(t, def("spin", "def execute(args):\n    while True:\n        pass\n"), Env{MaxSteps: 1 << 62, Timeout: 50 * time.Millisecond})
		_, err := callTool(t, tool, map[string]any{"city": "x"})
		var se *Error
		if !errors.As(err, &se) || se.Kind != ErrTime || !strings.Contains(err.Error(), "script exceeded its time limit of 50ms") {
			t.Fatalf("error %v, want a time limit error", err)
		}
	})
	t.Run("context canceled", func(t *testing.T) {
		tool := mustNew(t, def("spin", "def execute(args):\n    progress('running')\n    while True:\n        pass\n"), Env{MaxSteps: 1 << 62, Timeout: time.Minute})
		ctx, cancel := context.WithCancelCause(context.Background())
		running := make(chan struct{})
		var once sync.Once
		done := make(chan error, 1)
		go func() {
			_, err := tool.Handler.Call(ctx, &agentfleet.Call{ID: "c", Name: "spin", Arguments: map[string]any{}, Progress: func(any) { once.Do(func() { close(running) }) }})
			done <- err
		}()
		// Cancel once the script runs: cancellation must stop a running
		// loop, not only one about to start.
		<-running
		cancel(errors.New("user pressed stop"))
		err := <-done
		var se *Error
		if !errors.As(err, &se) || se.Kind != ErrCanceled || !strings.Contains(err.Error(), "user pressed stop") {
			t.Fatalf("error %v, want canceled", err)
		}
	})
	t.Run("result size", func(t *testing.T) {
		tool := mustNew(t, def("big", "def execute(args):\n    return 'x' * 2000\n"), Env{MaxResultBytes: 1000})
		_, err := callTool(t, tool, map[string]any{"city": "x"})
		if err == nil || !strings.Contains(err.Error(), "big: execute returned a result of") || !strings.Contains(err.Error(), "the limit is 1000 bytes") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("top-level code is bounded too", func(t *testing.T) {
		_, err := New(def("spin", "while True:\n    pass\ndef execute(args):\n    return 1\n"), Env{MaxSteps: 1000})
		if err == nil || !strings.Contains(err.Error(), "top-level code failed: script exceeded its limit of 1000 execution steps") {
			t.Fatalf("New: %v", err)
		}
	})
}

func TestProgress(t *testing.T) {
	tool := mustNew(t, def("steps", "def execute(args):\n    for i in range(3):\n        progress({'step': i, 'of': 3})\n    progress('done')\n    return 'ok'\n"), Env{})
	var got []any
	_, err := tool.Handler.Call(context.Background(), &agentfleet.Call{ID: "c", Name: "steps", Arguments: map[string]any{"city": "x"}, Progress: func(v any) { got = append(got, v) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"step": int64(0), "of": int64(3)},
		map[string]any{"step": int64(1), "of": int64(3)},
		map[string]any{"step": int64(2), "of": int64(3)},
		"done",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("progress %#v, want %#v", got, want)
	}

	// progress outside execute is refused.
	_, err = New(def("early", "progress(1)\ndef execute(args):\n    return 'x'\n"), Env{})
	if err == nil || !strings.Contains(err.Error(), "progress may be called only while execute runs") {
		t.Fatalf("New: %v", err)
	}
}

func TestTimeNow(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("X", 3600))
	tool := mustNew(t, def("clock", "def execute(args):\n    return '%s %d' % (time.now(), int(time.unix()))\n"), Env{Now: func() time.Time { return at }})
	res, err := callTool(t, tool, map[string]any{"city": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Content[0].Text, fmt.Sprintf("2025-03-04T04:06:07Z %d", at.Unix()); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// fleet is a fake fleet of in-process tools for call_tool.
type fleet struct {
	mu    sync.Mutex
	tools map[string]*agentfleet.Tool
	calls []string // name:id of every call
}

func (f *fleet) add(tools ...*agentfleet.Tool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tools == nil {
		f.tools = map[string]*agentfleet.Tool{}
	}
	for _, t := range tools {
		f.tools[t.Name] = t
	}
}

func (f *fleet) CallTool(ctx context.Context, call *agentfleet.ToolCall) (*agentfleet.ToolResult, error) {
	f.mu.Lock()
	t := f.tools[call.Name]
	f.calls = append(f.calls, call.Name+":"+call.ID)
	f.mu.Unlock()
	if t == nil {
		return nil, fmt.Errorf("Tool %s not found", call.Name)
	}
	// As across the bus: only the ID carries the depth.
	return t.Handler.Call(context.Background(), &agentfleet.Call{ID: call.ID, Name: call.Name, Arguments: call.Arguments, Progress: func(any) {}})
}

func TestCallToolComposes(t *testing.T) {
	f := &fleet{}
	env := Env{CallTool: f.CallTool}
	numSchema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)
	add := mustNew(t, &Definition{Name: "add", Description: "a+b", InputSchema: numSchema,
		Code: "def execute(args):\n    return {'content': str(args['a'] + args['b']), 'details': {'sum': args['a'] + args['b']}}\n"}, env)
	mul := mustNew(t, &Definition{Name: "mul", Description: "a*b", InputSchema: numSchema,
		Code: "def execute(args):\n    return str(args['a'] * args['b'])\n"}, env)
	boom := mustNew(t, &Definition{Name: "boom", Description: "fails", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: "def execute(args):\n    fail('boom went off')\n"}, env)
	// (a + b) * c, from two other tools.
	calc := mustNew(t, &Definition{Name: "calc", Description: "(a+b)*c", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: `
def execute(args):
    s = call_tool("add", {"a": args["a"], "b": args["b"]}, full=True)
    p = call_tool("mul", {"a": s["details"]["sum"], "b": args["c"]})
    b = call_tool("boom", {}, full=True)
    return {"content": p, "details": {"boom": b["is_error"], "boom_text": b["text"]}}
`}, env)
	f.add(add, mul, boom, calc)
	res, err := calc.Handler.Call(context.Background(), &agentfleet.Call{ID: "call_7", Name: "calc", Arguments: map[string]any{"a": 2.0, "b": 3.0, "c": 4.0}, Progress: func(any) {}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Content[0].Text, "20"; got != want {
		t.Fatalf("calc = %q, want %q", got, want)
	}
	if got, want := res.Details, (map[string]any{"boom": true, "boom_text": "boom: boom went off"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("details %v, want %v", got, want)
	}
	for _, c := range f.calls {
		name, id, _ := strings.Cut(c, ":")
		if !strings.HasPrefix(id, "call_7~d1~") || CallDepth(context.Background(), id) != 1 {
			t.Errorf("call of %s has ID %q, want call_7~d1~… (depth 1)", name, id)
		}
	}

	// Without full=True a failed call fails the script, naming the call.
	strict := mustNew(t, &Definition{Name: "strict", Description: "x", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: "def execute(args):\n    return call_tool('boom', {})\n"}, env)
	_, err = callTool(t, strict, nil)
	if err == nil || !strings.Contains(err.Error(), `strict: code:2:21: call_tool("boom") failed: boom: boom went off`) {
		t.Fatalf("error %v", err)
	}

	// No CallTool: call_tool says so.
	alone := mustNew(t, &Definition{Name: "alone", Description: "x", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: "def execute(args):\n    return call_tool('add', {'a': 1, 'b': 2})\n"}, Env{})
	if _, err := callTool(t, alone, nil); err == nil || !strings.Contains(err.Error(), "call_tool is not available here") {
		t.Fatalf("error %v", err)
	}
}

func TestCallToolDepthLimit(t *testing.T) {
	f := &fleet{}
	env := Env{CallTool: f.CallTool, MaxDepth: 3}
	// A tool that calls itself forever.
	loop := mustNew(t, &Definition{Name: "loop", Description: "recurses", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: "def execute(args):\n    return call_tool('loop', {})\n"}, env)
	f.add(loop)
	_, err := callTool(t, loop, nil)
	if err == nil || !strings.Contains(err.Error(), `call_tool("loop"): the limit of 3 nested tool calls is reached`) {
		t.Fatalf("error %v", err)
	}
	if got, want := len(f.calls), 3; got != want {
		t.Fatalf("%d nested calls, want %d: %v", got, want, f.calls)
	}
	for i, c := range f.calls {
		_, id, _ := strings.Cut(c, ":")
		if got := CallDepth(context.Background(), id); got != i+1 {
			t.Errorf("call %d: depth %d, want %d (id %s)", i, got, i+1, id)
		}
		if !strings.HasPrefix(id, "call_1~d") {
			t.Errorf("call %d: id %s does not keep the root", i, id)
		}
	}
	// With full=True the refusal is a value the script can handle.
	f.calls = nil
	soft := mustNew(t, &Definition{Name: "soft", Description: "recurses softly", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: "def execute(args):\n    r = call_tool('soft', {}, full=True)\n    return 'is_error=%s: %s' % (r['is_error'], r['text'])\n"}, env)
	f.add(soft)
	res, err := callTool(t, soft, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The innermost call's refusal, wrapped by the three levels above it.
	if got, want := res.Content[0].Text, "is_error=False: is_error=False: is_error=False: is_error=True: "+`call_tool("soft"): the limit of 3 nested tool calls is reached; scripted tools cannot call each other deeper`; got != want {
		t.Fatalf("soft = %q\nwant %q", got, want)
	}

	// The depth also travels in the context, within one process.
	if got := CallDepth(WithCallDepth(context.Background(), 2), "x"); got != 2 {
		t.Fatalf("CallDepth from ctx = %d", got)
	}
}

func TestPrepareAndValidate(t *testing.T) {
	d := def("weather", "def execute(args):\n    return args['city']\n")
	d.PrepareCode = "def prepare(args):\n    args['city'] = args.get('city', '').strip().title()\n    return args\n"
	d.ValidateCode = "def validate(args):\n    if args['city'] == '':\n        return 'city is empty'\n    return None\n"
	tool := mustNew(t, d, Env{})
	args, err := tool.PrepareArguments(map[string]any{"city": "  oslo "})
	if err != nil {
		t.Fatal(err)
	}
	if got := args["city"]; got != "Oslo" {
		t.Fatalf("prepared city %q", got)
	}
	if err := tool.ValidateArguments(args); err != nil {
		t.Fatal(err)
	}
	if err := tool.ValidateArguments(map[string]any{"city": ""}); err == nil || err.Error() != "weather: city is empty" {
		t.Fatalf("validate: %v", err)
	}

	served, err := WithChecks(tool)
	if err != nil {
		t.Fatal(err)
	}
	if served.PrepareArguments != nil || served.ValidateArguments != nil {
		t.Fatal("WithChecks kept hooks")
	}
	res, err := callTool(t, served, map[string]any{"city": " bergen"})
	if err != nil || res.Content[0].Text != "Bergen" {
		t.Fatalf("served call: %v %v", res, err)
	}
	if _, err := callTool(t, served, map[string]any{"city": "  "}); err == nil || err.Error() != "weather: city is empty" {
		t.Fatalf("served call with empty city: %v", err)
	}

	// Without validate_code, WithChecks validates against the schema.
	plain, err := WithChecks(mustNew(t, def("plain", "def execute(args):\n    return args['city']\n"), Env{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := callTool(t, plain, map[string]any{"city": 3}); err == nil || !strings.Contains(err.Error(), `plain: arguments invalid: at "/city"`) {
		t.Fatalf("served call with a number: %v", err)
	}

	bad := def("bad", "def execute(args):\n    return 'x'\n")
	bad.PrepareCode = "def prepare(args):\n    return [1]\n"
	if _, err := mustNew(t, bad, Env{}).PrepareArguments(map[string]any{}); err == nil || !strings.Contains(err.Error(), "prepare returned a list, want the arguments as a dict") {
		t.Fatalf("prepare: %v", err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	tool := mustNew(t, def("count", "def execute(args):\n    n = 0\n    for i in range(1000):\n        n += i\n    return '%s %d' % (args['city'], n)\n"), Env{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			city := fmt.Sprint("c", i)
			res, err := tool.Handler.Call(context.Background(), &agentfleet.Call{ID: city, Arguments: map[string]any{"city": city}, Progress: func(any) {}})
			if err != nil || res.Content[0].Text != city+" 499500" {
				t.Errorf("call %d: %v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
}
