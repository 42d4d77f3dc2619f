package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []agentfleet.Event
}

func (r *recorder) Emit(e *agentfleet.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, *e)
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, string(e.Type)+":"+e.ToolCallID)
	}
	return out
}

const weatherSchema = `{
  "type": "object",
  "properties": {
    "city":  {"type": "string", "minLength": 1},
    "units": {"type": "string", "enum": ["c", "f"]},
    "days":  {"type": "integer", "minimum": 1, "maximum": 7},
    "opts":  {"type": "object", "properties": {"lang": {"type": "string"}}, "required": ["lang"]}
  },
  "required": ["city"],
  "additionalProperties": false
}`

func textTool(name string, parallel bool, h agentfleet.HandlerFunc) *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`), Parallel: parallel},
		Handler: h,
	}
}

func echoHandler(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
	b, _ := json.Marshal(c.Arguments)
	return agentfleet.TextResult(string(b)), nil
}

func call(id, name, args string) agentfleet.ToolCall {
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		panic(err)
	}
	return agentfleet.ToolCall{ID: id, Name: name, Arguments: m}
}

func ptr[T any](v T) *T { return &v }

func TestSingleCall(t *testing.T) {
	weather := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "weather", Description: "w", InputSchema: json.RawMessage(weatherSchema)},
		Handler: agentfleet.HandlerFunc(echoHandler),
	}
	lower := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "lower", Description: "l", InputSchema: json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z]+$"}},"required":["s"]}`)},
		PrepareArguments: func(args map[string]any) (map[string]any, error) {
			s, _ := args["s"].(string)
			return map[string]any{"s": strings.ToLower(s)}, nil
		},
		Handler: agentfleet.HandlerFunc(echoHandler),
	}
	custom := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "custom", Description: "c"},
		ValidateArguments: func(args map[string]any) error {
			if _, ok := args["token"]; !ok {
				return errors.New("token is required by custom")
			}
			return nil
		},
		Handler: agentfleet.HandlerFunc(echoHandler),
	}
	failing := textTool("failing", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		return nil, errors.New("disk full at /var/data")
	})
	panicking := textTool("panicking", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		panic("index out of range [3]")
	})
	terminating := textTool("terminating", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		return &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text("done")}, Terminate: true}, nil
	})
	remote := &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "remote", Description: "r"}}

	store := tools.NewStore("test")
	store.MustRegister(weather, lower, custom, failing, panicking, terminating, remote)

	tests := []struct {
		name     string
		cfg      pipeline.Config
		call     agentfleet.ToolCall
		wantKind pipeline.Kind
		wantErr  bool
		wantText string // substring of the result text
		wantTerm bool
	}{
		{name: "ok", call: call("1", "weather", `{"city":"Tokyo","days":3,"units":"c","opts":{"lang":"en"}}`), wantKind: pipeline.OK, wantText: `"city":"Tokyo"`},
		{name: "unknown tool", call: call("1", "nope", `{}`), wantKind: pipeline.NotFound, wantErr: true, wantText: "Tool nope not found"},
		{name: "required", call: call("1", "weather", `{}`), wantKind: pipeline.Invalid, wantErr: true, wantText: "missing property 'city'"},
		{name: "type", call: call("1", "weather", `{"city":42}`), wantKind: pipeline.Invalid, wantErr: true, wantText: `at "/city": got number, want string`},
		{name: "enum", call: call("1", "weather", `{"city":"x","units":"k"}`), wantKind: pipeline.Invalid, wantErr: true, wantText: `at "/units"`},
		{name: "integer", call: call("1", "weather", `{"city":"x","days":1.5}`), wantKind: pipeline.Invalid, wantErr: true, wantText: `at "/days": got number, want integer`},
		{name: "maximum", call: call("1", "weather", `{"city":"x","days":9}`), wantKind: pipeline.Invalid, wantErr: true, wantText: `at "/days": maximum`},
		{name: "minLength", call: call("1", "weather", `{"city":""}`), wantKind: pipeline.Invalid, wantErr: true, wantText: `at "/city": minLength`},
		{name: "nested required", call: call("1", "weather", `{"city":"x","opts":{}}`), wantKind: pipeline.Invalid, wantErr: true, wantText: `at "/opts": missing property 'lang'`},
		{name: "nested type", call: call("1", "weather", `{"city":"x","opts":{"lang":1}}`), wantKind: pipeline.Invalid, wantErr: true, wantText: `at "/opts/lang": got number, want string`},
		{name: "additional properties", call: call("1", "weather", `{"city":"x","zip":1}`), wantKind: pipeline.Invalid, wantErr: true, wantText: `additional properties 'zip' not allowed`},
		{name: "arguments not JSON", call: agentfleet.ToolCall{ID: "1", Name: "weather", ArgumentsError: "arguments are not valid JSON: unexpected end"}, wantKind: pipeline.Invalid, wantErr: true, wantText: "Tool weather: arguments are not valid JSON"},
		{name: "prepare arguments", call: call("1", "lower", `{"s":"ABC"}`), wantKind: pipeline.OK, wantText: `{"s":"abc"}`},
		{name: "custom validator rejects", call: call("1", "custom", `{}`), wantKind: pipeline.Invalid, wantErr: true, wantText: "token is required by custom"},
		{name: "custom validator passes", call: call("1", "custom", `{"token":1}`), wantKind: pipeline.OK, wantText: `"token":1`},
		{name: "tool error", call: call("1", "failing", `{}`), wantKind: pipeline.Failed, wantErr: true, wantText: "disk full at /var/data"},
		{name: "tool panic", call: call("1", "panicking", `{}`), wantKind: pipeline.Failed, wantErr: true, wantText: "Tool panicking panicked: index out of range [3]"},
		{name: "no executor", call: call("1", "remote", `{}`), wantKind: pipeline.Failed, wantErr: true, wantText: "Tool remote has no executor"},
		{
			name: "executor", call: call("1", "remote", `{"a":1}`), wantKind: pipeline.OK, wantText: "remote ran",
			cfg: pipeline.Config{Executor: pipeline.ExecutorFunc(func(ctx context.Context, p *pipeline.Prepared, _ pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
				return agentfleet.TextResult(p.Tool.Name + " ran"), nil
			})},
		},
		{
			name: "executor timeout", call: call("1", "remote", `{}`), wantKind: pipeline.Timeout, wantErr: true, wantText: "timed out",
			cfg: pipeline.Config{Executor: pipeline.ExecutorFunc(func(ctx context.Context, p *pipeline.Prepared, _ pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
				return nil, errors.Join(errors.New("Tool remote"), pipeline.ErrTimeout)
			})},
		},
		{
			name: "before hook blocks with reason", call: call("1", "weather", `{"city":"x"}`), wantKind: pipeline.Blocked, wantErr: true, wantText: "weather is off limits",
			cfg: pipeline.Config{Before: func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
				return &pipeline.BeforeResult{Block: true, Reason: in.Call.Name + " is off limits"}, nil
			}},
		},
		{
			name: "before hook blocks without reason", call: call("1", "weather", `{"city":"x"}`), wantKind: pipeline.Blocked, wantErr: true, wantText: "Tool execution was blocked",
			cfg: pipeline.Config{Before: func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
				return &pipeline.BeforeResult{Block: true}, nil
			}},
		},
		{
			name: "before hook allows", call: call("1", "weather", `{"city":"x"}`), wantKind: pipeline.OK, wantText: `"city":"x"`,
			cfg: pipeline.Config{Before: func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
				if in.Args["city"] != "x" {
					return nil, errors.New("hook saw wrong args")
				}
				return &pipeline.BeforeResult{Block: false}, nil
			}},
		},
		{
			name: "before hook panics", call: call("1", "weather", `{"city":"x"}`), wantKind: pipeline.Failed, wantErr: true, wantText: "preparing the call panicked: boom",
			cfg: pipeline.Config{Before: func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
				panic("boom")
			}},
		},
		{
			name: "after hook overrides content", call: call("1", "weather", `{"city":"x"}`), wantKind: pipeline.OK, wantText: "masked",
			cfg: pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
				return &pipeline.AfterResult{Content: []agentfleet.Content{agentfleet.Text("masked")}}, nil
			}},
		},
		{
			name: "after hook overrides terminate", call: call("1", "weather", `{"city":"x"}`), wantKind: pipeline.OK, wantText: `"city":"x"`, wantTerm: true,
			cfg: pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
				return &pipeline.AfterResult{Terminate: ptr(true)}, nil
			}},
		},
		{
			name: "after hook clears terminate", call: call("1", "terminating", `{}`), wantKind: pipeline.OK, wantText: "done", wantTerm: false,
			cfg: pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
				return &pipeline.AfterResult{Terminate: ptr(false)}, nil
			}},
		},
		{
			name: "after hook marks error", call: call("1", "weather", `{"city":"x"}`), wantKind: pipeline.Failed, wantErr: true, wantText: `"city":"x"`,
			cfg: pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
				return &pipeline.AfterResult{IsError: ptr(true)}, nil
			}},
		},
		{
			name: "after hook clears error", call: call("1", "failing", `{}`), wantKind: pipeline.OK, wantText: "disk full",
			cfg: pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
				if !in.IsError {
					return nil, errors.New("hook should see the error")
				}
				return &pipeline.AfterResult{IsError: ptr(false)}, nil
			}},
		},
		{
			name: "after hook nil keeps result", call: call("1", "terminating", `{}`), wantKind: pipeline.OK, wantText: "done", wantTerm: true,
			cfg: pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
				return nil, nil
			}},
		},
		{
			name: "after hook error", call: call("1", "weather", `{"city":"x"}`), wantKind: pipeline.Failed, wantErr: true, wantText: "after-tool-call hook: audit log unavailable",
			cfg: pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
				return nil, errors.New("audit log unavailable")
			}},
		},
		{
			name: "after hook panic", call: call("1", "weather", `{"city":"x"}`), wantKind: pipeline.Failed, wantErr: true, wantText: "after-tool-call hook panicked: nil map",
			cfg: pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
				panic("nil map")
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			tt.cfg.Sink = rec
			p := pipeline.New(tt.cfg)
			b := p.Run(context.Background(), &pipeline.Context{Tools: store}, &agentfleet.AssistantMessage{}, []agentfleet.ToolCall{tt.call})
			if got, want := len(b.Outcomes), 1; got != want {
				t.Fatalf("outcomes = %d, want %d", got, want)
			}
			o := b.Outcomes[0]
			if got, want := o.Kind, tt.wantKind; got != want {
				t.Errorf("kind = %q, want %q (result %q)", got, want, agentfleet.JoinText(o.Result.Content))
			}
			if got, want := o.IsError, tt.wantErr; got != want {
				t.Errorf("is_error = %v, want %v", got, want)
			}
			if got := agentfleet.JoinText(o.Result.Content); !strings.Contains(got, tt.wantText) {
				t.Errorf("result = %q, want it to contain %q", got, tt.wantText)
			}
			if got, want := b.Terminate, tt.wantTerm; got != want {
				t.Errorf("terminate = %v, want %v", got, want)
			}
			msg := b.Messages[0]
			if msg.ToolCallID != tt.call.ID || msg.ToolName != tt.call.Name || msg.IsError != tt.wantErr || msg.Role != agentfleet.RoleTool {
				t.Errorf("message = %+v, does not match the call", msg)
			}
			if got, want := strings.Join(rec.types(), " "), "tool.start:1 tool.end:1"; got != want {
				t.Errorf("events = %s, want %s", got, want)
			}
		})
	}
}

func TestAfterHookOverridesDetailsAndUsage(t *testing.T) {
	store := tools.NewStore("t")
	store.MustRegister(textTool("a", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		return &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text("secret")}, Details: map[string]any{"k": "v"}}, nil
	}))
	p := pipeline.New(pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
		return &pipeline.AfterResult{Details: map[string]any{"masked": true}, Usage: &agentfleet.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}}, nil
	}})
	b := p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("1", "a", `{}`)})
	m := b.Messages[0]
	if m.Details["masked"] != true || m.Details["k"] != nil {
		t.Errorf("details = %v, want only masked", m.Details)
	}
	if m.Usage == nil || m.Usage.TotalTokens != 3 {
		t.Errorf("usage = %+v, want total 3", m.Usage)
	}
	if got, want := agentfleet.JoinText(m.Content), "secret"; got != want {
		t.Errorf("content = %q, want %q (kept)", got, want)
	}
}

func TestPartialResults(t *testing.T) {
	store := tools.NewStore("t")
	store.MustRegister(textTool("progress", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		for i := 1; i <= 3; i++ {
			c.Progress(map[string]any{"step": i})
		}
		return agentfleet.TextResult("finished"), nil
	}))
	rec := &recorder{}
	p := pipeline.New(pipeline.Config{Sink: rec})
	p.Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("c1", "progress", `{}`)})
	if got, want := strings.Join(rec.types(), " "), "tool.start:c1 tool.update:c1 tool.update:c1 tool.update:c1 tool.end:c1"; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	for i, e := range rec.events[1:4] {
		if got, want := e.Partial.(map[string]any)["step"], i+1; got != want {
			t.Errorf("update %d partial step = %v, want %v", i, got, want)
		}
		if e.ToolName != "progress" {
			t.Errorf("update %d tool name = %q", i, e.ToolName)
		}
	}
	end := rec.events[4]
	if end.IsError || agentfleet.JoinText(end.Result.Content) != "finished" || end.DurationMS <= 0 {
		t.Errorf("tool.end = %+v", end)
	}
}

func TestAbortBeforeExecution(t *testing.T) {
	var ran atomic.Int32
	store := tools.NewStore("t")
	store.MustRegister(textTool("a", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ran.Add(1)
		return agentfleet.TextResult("ran"), nil
	}))
	for _, mode := range []pipeline.Mode{pipeline.Sequential, pipeline.Parallel} {
		t.Run(string(mode), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			p := pipeline.New(pipeline.Config{Mode: mode})
			b := p.Run(ctx, &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("1", "a", `{}`), call("2", "a", `{}`)})
			for i, o := range b.Outcomes {
				if o.Kind != pipeline.Skipped || !o.IsError || agentfleet.JoinText(o.Result.Content) != pipeline.SkippedText {
					t.Errorf("outcome %d = %s %q, want skipped", i, o.Kind, agentfleet.JoinText(o.Result.Content))
				}
			}
			if ran.Load() != 0 {
				t.Errorf("tool ran %d times after abort", ran.Load())
			}
		})
	}
}

func TestBeforeHookAbort(t *testing.T) {
	store := tools.NewStore("t")
	store.MustRegister(textTool("a", false, echoHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := pipeline.New(pipeline.Config{Before: func(context.Context, *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
		cancel() // the user declined: the hook aborts the run
		return nil, nil
	}})
	b := p.Run(ctx, &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("1", "a", `{}`), call("2", "a", `{}`)})
	if got, want := b.Outcomes[0].Kind, pipeline.Aborted; got != want {
		t.Errorf("first = %s, want %s", got, want)
	}
	if got, want := agentfleet.JoinText(b.Outcomes[0].Result.Content), pipeline.AbortedText; got != want {
		t.Errorf("first text = %q, want %q", got, want)
	}
	if got, want := b.Outcomes[1].Kind, pipeline.Skipped; got != want {
		t.Errorf("second = %s, want %s", got, want)
	}
}

func TestAbortDuringExecution(t *testing.T) {
	for _, mode := range []pipeline.Mode{pipeline.Sequential, pipeline.Parallel} {
		t.Run(string(mode), func(t *testing.T) {
			started := make(chan struct{})
			store := tools.NewStore("t")
			store.MustRegister(textTool("wait", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}))
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-started
				cancel()
			}()
			calls := []agentfleet.ToolCall{call("1", "wait", `{}`)}
			if mode == pipeline.Sequential {
				calls = append(calls, call("2", "wait", `{}`))
			}
			b := pipeline.New(pipeline.Config{Mode: mode}).Run(ctx, &pipeline.Context{Tools: store}, nil, calls)
			if got, want := b.Outcomes[0].Kind, pipeline.Aborted; got != want {
				t.Errorf("running call = %s, want %s", got, want)
			}
			if got, want := agentfleet.JoinText(b.Outcomes[0].Result.Content), pipeline.AbortedText; got != want {
				t.Errorf("running call text = %q, want %q", got, want)
			}
			if mode == pipeline.Sequential {
				if got, want := b.Outcomes[1].Kind, pipeline.Skipped; got != want {
					t.Errorf("next call = %s, want %s", got, want)
				}
			}
		})
	}
}

func TestLocalTimeout(t *testing.T) {
	store := tools.NewStore("t")
	tool := textTool("slow", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tool.TimeoutMS = 5
	store.MustRegister(tool)
	b := pipeline.New(pipeline.Config{}).Run(context.Background(), &pipeline.Context{Tools: store}, nil, []agentfleet.ToolCall{call("1", "slow", `{}`)})
	o := b.Outcomes[0]
	if o.Kind != pipeline.Timeout || !strings.Contains(agentfleet.JoinText(o.Result.Content), "timed out after 5ms") {
		t.Errorf("outcome = %s %q, want timeout after 5ms", o.Kind, agentfleet.JoinText(o.Result.Content))
	}
}

func TestModeSelection(t *testing.T) {
	store := tools.NewStore("t")
	store.MustRegister(textTool("par", true, echoHandler), textTool("seq", false, echoHandler))
	tests := []struct {
		name  string
		mode  pipeline.Mode
		calls []string
		want  bool
	}{
		{"global sequential", pipeline.Sequential, []string{"par", "par"}, false},
		{"default is sequential", "", []string{"par", "par"}, false},
		{"parallel", pipeline.Parallel, []string{"par", "par"}, true},
		{"one tool not parallel-safe", pipeline.Parallel, []string{"par", "seq", "par"}, false},
		{"unknown tool does not force sequential", pipeline.Parallel, []string{"par", "missing"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []agentfleet.ToolCall
			for i, n := range tt.calls {
				calls = append(calls, call(string(rune('a'+i)), n, `{}`))
			}
			b := pipeline.New(pipeline.Config{Mode: tt.mode}).Run(context.Background(), &pipeline.Context{Tools: store}, nil, calls)
			if got := b.Parallel; got != tt.want {
				t.Errorf("parallel = %v, want %v", got, tt.want)
			}
			if len(b.Messages) != len(calls) {
				t.Errorf("messages = %d, want %d", len(b.Messages), len(calls))
			}
		})
	}
}

// TestParallelOrderAndOverlap releases the calls in reverse order once all
// of them are running: that they were all running at once proves overlap,
// and the results must still come back in call order.
func TestParallelOrderAndOverlap(t *testing.T) {
	const n = 4
	started := make(chan string, n)
	release := map[string]chan struct{}{}
	for i := range n {
		release[string(rune('a'+i))] = make(chan struct{})
	}
	store := tools.NewStore("t")
	store.MustRegister(textTool("wait", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		started <- c.ID
		<-release[c.ID]
		return agentfleet.TextResult("result " + c.ID), nil
	}))
	var calls []agentfleet.ToolCall
	for i := range n {
		calls = append(calls, call(string(rune('a'+i)), "wait", `{}`))
	}
	rec := &recorder{}
	done := make(chan *pipeline.Batch)
	go func() {
		done <- pipeline.New(pipeline.Config{Mode: pipeline.Parallel, Sink: rec}).Run(context.Background(), &pipeline.Context{Tools: store}, nil, calls)
	}()
	for range n {
		<-started // all n run at once, or this blocks forever
	}
	var ends []string
	for i := n - 1; i >= 0; i-- {
		id := string(rune('a' + i))
		close(release[id])
		ends = append(ends, id)
	}
	b := <-done
	for i, o := range b.Outcomes {
		if got, want := agentfleet.JoinText(o.Result.Content), "result "+calls[i].ID; got != want {
			t.Errorf("outcome %d = %q, want %q", i, got, want)
		}
		if got, want := b.Messages[i].ToolCallID, calls[i].ID; got != want {
			t.Errorf("message %d id = %q, want %q", i, got, want)
		}
	}
	// All starts come before any end; the starts are in call order.
	types := rec.types()
	for i := range n {
		if got, want := types[i], "tool.start:"+calls[i].ID; got != want {
			t.Errorf("event %d = %s, want %s", i, got, want)
		}
	}
}

func TestParallelCap(t *testing.T) {
	const n, limit = 6, 2
	var inFlight, peak atomic.Int32
	started := make(chan struct{}, n)
	release := make(chan struct{})
	store := tools.NewStore("t")
	store.MustRegister(textTool("wait", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		cur := inFlight.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		started <- struct{}{}
		<-release
		inFlight.Add(-1)
		return agentfleet.TextResult("ok"), nil
	}))
	var calls []agentfleet.ToolCall
	for i := range n {
		calls = append(calls, call(string(rune('a'+i)), "wait", `{}`))
	}
	done := make(chan *pipeline.Batch)
	go func() {
		done <- pipeline.New(pipeline.Config{Mode: pipeline.Parallel, MaxParallel: limit}).Run(context.Background(), &pipeline.Context{Tools: store}, nil, calls)
	}()
	// Let one call finish each time one starts; with the cap the pipeline
	// never has more than limit running.
	for range n {
		<-started
		release <- struct{}{}
	}
	b := <-done
	if got := peak.Load(); got > limit {
		t.Errorf("peak concurrency = %d, want at most %d", got, limit)
	}
	for i, o := range b.Outcomes {
		if o.Kind != pipeline.OK {
			t.Errorf("outcome %d = %s", i, o.Kind)
		}
	}
}

func TestTerminate(t *testing.T) {
	store := tools.NewStore("t")
	store.MustRegister(
		textTool("stop", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text("stop")}, Terminate: true}, nil
		}),
		textTool("go", true, echoHandler),
	)
	tests := []struct {
		name  string
		calls []string
		want  bool
	}{
		{"all", []string{"stop", "stop"}, true},
		{"some", []string{"stop", "go"}, false},
		{"none", []string{"go", "go"}, false},
		{"empty batch", nil, false},
	}
	for _, tt := range tests {
		for _, mode := range []pipeline.Mode{pipeline.Sequential, pipeline.Parallel} {
			t.Run(tt.name+"/"+string(mode), func(t *testing.T) {
				var calls []agentfleet.ToolCall
				for i, n := range tt.calls {
					calls = append(calls, call(string(rune('a'+i)), n, `{}`))
				}
				b := pipeline.New(pipeline.Config{Mode: mode}).Run(context.Background(), &pipeline.Context{Tools: store}, nil, calls)
				if b.Terminate != tt.want {
					t.Errorf("terminate = %v, want %v", b.Terminate, tt.want)
				}
			})
		}
	}
}
