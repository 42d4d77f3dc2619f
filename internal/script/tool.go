package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/script/convert"
	"go.starlark.net/starlark"
)

// New checks def (see Check) and returns it as a tool whose Handler runs
// execute(args) in a fresh sandboxed thread for every call, under the
// limits of env. The tool's PrepareArguments and ValidateArguments run
// prepare_code and validate_code when def has them; an in-process pipeline
// calls them before the handler. To serve the tool where the caller sees
// only its definition, wrap it with WithChecks.
//
// The handler's errors say what went wrong and where, prefixed with the
// tool's name: the message of fail() as the script gave it, a Starlark
// error with its position and backtrace, the step or time limit, or a
// result that is not a string or a result dict or is too large.
func New(def *Definition, env Env) (*agentfleet.Tool, error) {
	env = env.withDefaults()
	c, err := compile(context.Background(), def, env)
	if err != nil {
		return nil, err
	}
	return c.tool(), nil
}

func (c *compiled) tool() *agentfleet.Tool {
	t := &agentfleet.Tool{ToolDef: c.def.ToolDef(), Handler: agentfleet.HandlerFunc(c.call)}
	if c.prepare != nil {
		t.PrepareArguments = func(args map[string]any) (map[string]any, error) {
			return c.runPrepare(context.Background(), args)
		}
	}
	if c.validate != nil {
		t.ValidateArguments = func(args map[string]any) error {
			return c.runValidate(context.Background(), args)
		}
	}
	return t
}

// call is the tool's handler: execute(args).
func (c *compiled) call(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
	res, _, err := c.runExecute(ctx, call)
	return res, err
}

// runExecute runs execute(args) and returns the call's state too, for the
// dry run.
func (c *compiled) runExecute(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, *callState, error) {
	if call.Progress == nil {
		call.Progress = func(any) {}
	}
	st := &callState{env: &c.env, tool: c.def.Name, entry: "execute", call: call, depth: CallDepth(ctx, call.ID)}
	args, err := convert.ToStarlark(call.Arguments)
	if err != nil {
		return nil, st, fmt.Errorf("%s: arguments: %w", c.def.Name, err)
	}
	if call.Arguments == nil {
		args = starlark.NewDict(0)
	}
	v, err := run(ctx, st, c.execute.fn, args)
	if err != nil {
		return nil, st, c.fail(err, st)
	}
	err = checkJSONSize(v, "execute returned a result that", c.env.MaxResultBytes)
	var res *agentfleet.ToolResult
	if err == nil {
		res, err = toResult(v)
	}
	if err == nil {
		if n := jsonSize(res); n > c.env.MaxResultBytes {
			err = fmt.Errorf("execute returned a result of %d bytes as JSON, the limit is %d bytes", n, c.env.MaxResultBytes)
		}
	}
	if err != nil {
		return nil, st, &Error{Tool: c.def.Name, Kind: ErrResult, Msg: err.Error()}
	}
	return res, st, nil
}

func (c *compiled) runPrepare(ctx context.Context, args map[string]any) (map[string]any, error) {
	sargs, err := convert.ToStarlark(args)
	if err != nil {
		return nil, fmt.Errorf("%s: arguments: %w", c.def.Name, err)
	}
	if args == nil {
		sargs = starlark.NewDict(0)
	}
	st := &callState{env: &c.env, tool: c.def.Name, entry: "prepare"}
	v, err := run(ctx, st, c.prepare.fn, sargs)
	if err != nil {
		return nil, c.fail(err, st)
	}
	d, ok := v.(*starlark.Dict)
	if !ok {
		return nil, &Error{Tool: c.def.Name, Kind: ErrResult, Msg: fmt.Sprintf("prepare returned a %s, want the arguments as a dict", v.Type())}
	}
	if err := checkJSONSize(d, "prepare returned arguments that", c.env.MaxResultBytes); err != nil {
		return nil, &Error{Tool: c.def.Name, Kind: ErrResult, Msg: err.Error()}
	}
	gv, err := convert.ToGo(d)
	if err != nil {
		return nil, &Error{Tool: c.def.Name, Kind: ErrResult, Msg: "prepare returned arguments that have no JSON form: " + err.Error()}
	}
	out := gv.(map[string]any)
	if n := jsonSize(out); n > c.env.MaxResultBytes {
		return nil, &Error{Tool: c.def.Name, Kind: ErrResult, Msg: fmt.Sprintf("prepare returned arguments of %d bytes as JSON, the limit is %d bytes", n, c.env.MaxResultBytes)}
	}
	return out, nil
}

// runValidate runs validate(args); a returned string is the rejection, as
// the text of the error.
func (c *compiled) runValidate(ctx context.Context, args map[string]any) error {
	sargs, err := convert.ToStarlark(args)
	if err != nil {
		return fmt.Errorf("%s: arguments: %w", c.def.Name, err)
	}
	if args == nil {
		sargs = starlark.NewDict(0)
	}
	st := &callState{env: &c.env, tool: c.def.Name, entry: "validate"}
	v, err := run(ctx, st, c.validate.fn, sargs)
	if err != nil {
		return c.fail(err, st)
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return nil
	case starlark.String:
		if v == "" {
			return nil
		}
		return &Error{Tool: c.def.Name, Kind: ErrRejected, Msg: string(v)}
	default:
		return &Error{Tool: c.def.Name, Kind: ErrResult, Msg: fmt.Sprintf("validate returned a %s, want None when the arguments are fine or a string saying what is wrong", v.Type())}
	}
}

// WithChecks returns a copy of t for serving where callers see only its
// definition (a worker of the fleet: the orchestrator validates arguments
// against the schema alone, and call_tool not at all). The copy's Handler
// runs t's PrepareArguments, then t's ValidateArguments or, when t has none,
// the input schema, and then t's Handler; it has no hooks itself, so that
// nothing runs twice. The error says why the schema does not compile.
func WithChecks(t *agentfleet.Tool) (*agentfleet.Tool, error) {
	schema, err := checkSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	prepare, validate, next := t.PrepareArguments, t.ValidateArguments, t.Handler
	if next == nil {
		return nil, fmt.Errorf("tool %s has no handler", t.Name)
	}
	out := &agentfleet.Tool{ToolDef: t.ToolDef}
	out.Handler = agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
		args := call.Arguments
		if args == nil {
			args = map[string]any{}
		}
		if prepare != nil {
			p, err := prepare(args)
			if err != nil {
				return nil, named(t.Name, "preparing arguments", err)
			}
			if p != nil {
				args = p
			}
		}
		var err error
		if validate != nil {
			err = validate(args)
		} else {
			err = schema.Validate(args)
		}
		if err != nil {
			return nil, named(t.Name, "", err)
		}
		c := *call
		c.Arguments = args
		return next.Call(ctx, &c)
	})
	return out, nil
}

// named puts the tool's name (and what was under way) in front of err,
// unless err is a script Error, which names the tool already.
func named(tool, doing string, err error) error {
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	if doing != "" {
		return fmt.Errorf("%s: %s: %w", tool, doing, err)
	}
	return fmt.Errorf("%s: %w", tool, err)
}

// ErrorKind says how a script failed.
type ErrorKind string

// Kinds of Error.
const (
	// ErrFail: the script called fail(); Msg is its message.
	ErrFail ErrorKind = "fail"
	// ErrRuntime: a Starlark error (a missing key, a wrong type, ...).
	ErrRuntime ErrorKind = "runtime"
	// ErrSteps: the step limit was reached.
	ErrSteps ErrorKind = "steps"
	// ErrTime: the wall-time limit was reached.
	ErrTime ErrorKind = "time"
	// ErrMemory: an operation would have taken the call over its memory
	// budget (Env.MaxMemory); Msg names the operation and its operands.
	ErrMemory ErrorKind = "memory"
	// ErrCanceled: the call's context ended (an abort or the caller's
	// timeout).
	ErrCanceled ErrorKind = "canceled"
	// ErrResult: the script returned a value of the wrong shape or size.
	ErrResult ErrorKind = "result"
	// ErrRejected: validate(args) rejected the arguments; Msg is its text.
	ErrRejected ErrorKind = "rejected"
)

// Error is the error of a scripted tool's call.
type Error struct {
	Tool string
	Kind ErrorKind
	// Pos is the script position where it failed ("code:3:7"), when known.
	Pos string
	// Msg is what went wrong, with Pos and a backtrace for runtime errors.
	Msg string
}

// Error returns "<tool>: <msg>", the text of the error result.
func (e *Error) Error() string { return e.Tool + ": " + e.Msg }

func (c *compiled) fail(err error, st *callState) error {
	var re *runError
	if !errors.As(err, &re) {
		return &Error{Tool: c.def.Name, Kind: ErrRuntime, Msg: err.Error()}
	}
	kind := map[runKind]ErrorKind{kindRuntime: ErrRuntime, kindFail: ErrFail, kindSteps: ErrSteps, kindTime: ErrTime, kindCanceled: ErrCanceled, kindMemory: ErrMemory}[re.kind]
	return &Error{Tool: c.def.Name, Kind: kind, Pos: re.pos, Msg: re.Error()}
}

// toResult turns what execute returned into a tool result: a string is the
// text; a dict may hold content (a string or a list of content blocks, each
// a string or a dict {"type": "text", "text": ...} or {"type": "image",
// "data": ..., "mime_type": ...}), details (a dict) and terminate (a bool).
func toResult(v starlark.Value) (*agentfleet.ToolResult, error) {
	switch v := v.(type) {
	case starlark.String:
		return agentfleet.TextResult(string(v)), nil
	case *starlark.Dict:
		gv, err := convert.ToGo(v)
		if err != nil {
			return nil, fmt.Errorf("execute returned a dict that has no JSON form: %w", err)
		}
		return resultFromMap(gv.(map[string]any))
	case starlark.NoneType:
		return nil, errors.New(`execute returned None: return a string, or a dict {"content": ..., "details": {...}}`)
	default:
		return nil, fmt.Errorf(`execute returned a %s: return a string, or a dict {"content": ..., "details": {...}}`, v.Type())
	}
}

func resultFromMap(m map[string]any) (*agentfleet.ToolResult, error) {
	res := &agentfleet.ToolResult{Content: []agentfleet.Content{}}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch k {
		case "content", "details", "terminate":
		default:
			return nil, fmt.Errorf("execute returned a dict with key %q; the keys of a result are content, details and terminate", k)
		}
	}
	switch c := m["content"].(type) {
	case nil:
		if _, ok := m["content"]; ok {
			return nil, errors.New(`execute returned "content": None; give a string or a list of content blocks`)
		}
	case string:
		res.Content = []agentfleet.Content{agentfleet.Text(c)}
	case []any:
		for i, b := range c {
			block, err := contentBlock(b)
			if err != nil {
				return nil, fmt.Errorf("execute returned content[%d]: %w", i, err)
			}
			res.Content = append(res.Content, block)
		}
	default:
		return nil, fmt.Errorf(`execute returned "content" of type %s; give a string or a list of content blocks`, goKind(c))
	}
	switch d := m["details"].(type) {
	case nil:
	case map[string]any:
		res.Details = d
	default:
		return nil, fmt.Errorf(`execute returned "details" of type %s; give a dict`, goKind(d))
	}
	switch t := m["terminate"].(type) {
	case nil:
	case bool:
		res.Terminate = t
	default:
		return nil, fmt.Errorf(`execute returned "terminate" of type %s; give True or False`, goKind(t))
	}
	return res, nil
}

func contentBlock(b any) (agentfleet.Content, error) {
	switch b := b.(type) {
	case string:
		return agentfleet.Text(b), nil
	case map[string]any:
		var c agentfleet.Content
		for _, k := range slices.Sorted(maps.Keys(b)) {
			s, ok := b[k].(string)
			if !ok {
				return c, fmt.Errorf("%q is a %s, want a string", k, goKind(b[k]))
			}
			switch k {
			case "type":
				c.Type = s
			case "text":
				c.Text = s
			case "data":
				c.Data = s
			case "mime_type":
				c.MIMEType = s
			default:
				return c, fmt.Errorf("unknown key %q; a block has type, text (text blocks), data and mime_type (image blocks)", k)
			}
		}
		if err := c.Validate(); err != nil {
			return c, err
		}
		return c, nil
	default:
		return agentfleet.Content{}, fmt.Errorf("a block is a %s, want a string or a dict", goKind(b))
	}
}

func goKind(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case string:
		return "string"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// jsonSize returns the length of v's JSON encoding (a very large number
// when it has none).
func jsonSize(v any) int {
	var n counter
	if err := json.NewEncoder(&n).Encode(v); err != nil {
		return int(^uint(0) >> 1)
	}
	return int(n) - 1 // the encoder's newline
}

type counter int

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }

// describeArgs renders args as compact JSON for messages.
func describeArgs(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return fmt.Sprint(args)
	}
	s := string(b)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.TrimSpace(s)
}
