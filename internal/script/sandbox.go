package script

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/script/convert"
	"github.com/agentfleet/agentfleet/internal/script/rewrite"
	"go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// Defaults of Env.
const (
	DefaultMaxSteps       = 10_000_000
	DefaultTimeout        = 5 * time.Second
	DefaultMaxResultBytes = 256 << 10
	DefaultMaxDepth       = 3
	DefaultMaxMemory      = 64 << 20
	// MaxProgress is how many progress() calls of one call are passed on;
	// later ones are dropped, so that a loop cannot flood the bus.
	MaxProgress = 1000
	// DefaultMaxProgressBytes is the default of Env.MaxProgressBytes.
	DefaultMaxProgressBytes = 1 << 20
)

// Env is what scripts may reach outside their sandbox, and the limits of
// their calls. The zero value means the documented defaults, with a
// call_tool that fails.
type Env struct {
	// CallTool runs a script's call_tool(name, args): call.ID carries the
	// depth of nesting (see CallDepth) and must be passed on unchanged to
	// the worker that runs the call. A returned error is the call's
	// failure; its text is what the script sees, and a *ResultError's
	// result is what call_tool(full=True) returns. Optional; when nil,
	// call_tool fails with "call_tool is not available here".
	CallTool func(ctx context.Context, call *agentfleet.ToolCall) (*agentfleet.ToolResult, error)
	// MaxSteps bounds the Starlark execution steps of one call (and of the
	// script's top-level code when it loads); default DefaultMaxSteps.
	MaxSteps uint64
	// Timeout bounds the wall time of one call, call_tool included; default
	// DefaultTimeout. Long builtins check it as they go, not only between
	// steps.
	Timeout time.Duration
	// MaxMemory bounds the bytes one call (or the script's top-level code)
	// allocates in total through the operations that can allocate much in
	// one step: repetition, concatenation, formatting, str and repr,
	// join, replace, split, list, dict, sorted, comprehensions, appends,
	// json.encode and json.decode. Each computes the size of its result
	// before it makes it, and fails the call when that would exceed the
	// budget. Default DefaultMaxMemory.
	MaxMemory int64
	// MaxResultBytes bounds the JSON size of a result, of the value of one
	// progress call and of prepare's arguments; default
	// DefaultMaxResultBytes.
	MaxResultBytes int
	// MaxProgressBytes bounds the JSON bytes of the progress values one
	// call passes on, in total: once a value would take the call past it,
	// that value and every later one are dropped, without being converted,
	// so that a loop of progress() floods neither the bus nor the event
	// stream; default DefaultMaxProgressBytes.
	MaxProgressBytes int
	// MaxDepth bounds the nesting of call_tool: a call made by a scripted
	// tool that was itself called MaxDepth levels deep fails; default
	// DefaultMaxDepth.
	MaxDepth int
	// Now is the clock of time.now(); default time.Now.
	Now func() time.Time
	// Print receives the output of print(), with the tool's name; default:
	// discarded.
	Print func(tool, msg string)

	// dryRun makes call_tool return a placeholder instead of calling.
	dryRun bool
}

func (e Env) withDefaults() Env {
	if e.MaxSteps == 0 {
		e.MaxSteps = DefaultMaxSteps
	}
	if e.Timeout <= 0 {
		e.Timeout = DefaultTimeout
	}
	if e.MaxMemory <= 0 {
		e.MaxMemory = DefaultMaxMemory
	}
	if e.MaxResultBytes <= 0 {
		e.MaxResultBytes = DefaultMaxResultBytes
	}
	if e.MaxDepth <= 0 {
		e.MaxDepth = DefaultMaxDepth
	}
	if e.MaxProgressBytes <= 0 {
		e.MaxProgressBytes = DefaultMaxProgressBytes
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	return e
}

// fileOptions are the dialect of scripts: while loops, sets and top-level
// control flow are allowed (the step limit bounds them); recursion is not,
// since deep recursion would exhaust the Go stack before the step limit.
var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true}

// predeclared are the builtins scripts get besides Starlark's universe, the
// bounded versions of the universe's builtins that can allocate or iterate
// much in one step (see builtins.go), and the hidden builtins of the
// rewrite (package rewrite). They are frozen, shared by every thread; per-call
// state reaches them through the thread (callState).
var predeclared = func() starlark.StringDict {
	d := starlark.StringDict{
		"json": jsonModule,
		"math": math.Module,
		"time": &starlarkstruct.Module{Name: "time", Members: starlark.StringDict{
			"now":  starlark.NewBuiltin("time.now", timeNow),
			"unix": starlark.NewBuiltin("time.unix", timeUnix),
		}},
		"progress":  starlark.NewBuiltin("progress", progressBuiltin),
		"call_tool": starlark.NewBuiltin("call_tool", callToolBuiltin),
		"fail":      starlark.NewBuiltin("fail", failBuiltin),

		rewrite.Binary:   starlark.NewBuiltin(rewrite.Binary, binaryBuiltin),
		rewrite.Inplace:  starlark.NewBuiltin(rewrite.Inplace, inplaceBuiltin),
		rewrite.AugIndex: starlark.NewBuiltin(rewrite.AugIndex, augIndexBuiltin),
		rewrite.SetIndex: starlark.NewBuiltin(rewrite.SetIndex, setIndexBuiltin),
		rewrite.Grow:     starlark.NewBuiltin(rewrite.Grow, growBuiltin),
		rewrite.Attr:     starlark.NewBuiltin(rewrite.Attr, attrBuiltin),
	}
	for name, b := range boundedUniverse {
		d[name] = b
	}
	d.Freeze()
	return d
}()

func isPredeclared(name string) bool { _, ok := predeclared[name]; return ok }

const stateKey = "agentfleet.script"

// callState is the state of one run of a script function, kept in its
// thread.
type callState struct {
	ctx   context.Context
	env   *Env
	tool  string
	entry string // "execute", "validate", "prepare", or "" at load
	call  *agentfleet.Call
	depth int

	progressed   int
	progressOut  int   // JSON bytes of the progress values passed on
	placeholders int   // call_tool placeholders returned in a dry run
	mem          int64 // bytes charged to the memory budget
}

func stateOf(thread *starlark.Thread) *callState {
	st, _ := thread.Local(stateKey).(*callState)
	return st
}

// failError is the error of fail(): the script's own message.
type failError struct{ msg string }

func (e *failError) Error() string { return e.msg }

func failBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	sep := " "
	if err := starlark.UnpackArgs("fail", nil, kwargs, "sep?", &sep); err != nil {
		return nil, err
	}
	parts := make([]string, len(args))
	for i, v := range args {
		if s, ok := starlark.AsString(v); ok {
			parts[i] = s
		} else if err := chargeText(thread, "fail()", v); err != nil {
			return nil, err
		} else {
			parts[i] = v.String()
		}
	}
	msg := strings.Join(parts, sep)
	if msg == "" {
		msg = "failed"
	}
	return nil, &failError{msg: msg}
}

func timeNow(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
		return nil, err
	}
	return starlark.String(clock(thread)().UTC().Format(time.RFC3339)), nil
}

func timeUnix(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
		return nil, err
	}
	t := clock(thread)()
	return starlark.Float(float64(t.UnixNano()) / 1e9), nil
}

func clock(thread *starlark.Thread) func() time.Time {
	if st := stateOf(thread); st != nil && st.env.Now != nil {
		return st.env.Now
	}
	return time.Now
}

func progressBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var v starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &v); err != nil {
		return nil, err
	}
	st := stateOf(thread)
	if st == nil || st.call == nil {
		return nil, errors.New("progress may be called only while execute runs")
	}
	if st.progressed >= MaxProgress || st.progressOut >= st.env.MaxProgressBytes {
		// Cut off: dropped without the cost of converting it.
		st.progressed++
		return starlark.None, nil
	}
	if err := checkJSONSize(v, "progress: the value", st.env.MaxResultBytes); err != nil {
		return nil, err
	}
	gv, err := convert.ToGo(v)
	if err != nil {
		return nil, fmt.Errorf("progress: %w", err)
	}
	n := jsonSize(gv)
	if n > st.env.MaxResultBytes {
		return nil, fmt.Errorf("progress: the value is %d bytes as JSON, the limit is %d", n, st.env.MaxResultBytes)
	}
	st.progressed++
	if n > st.env.MaxProgressBytes-st.progressOut {
		st.progressOut = st.env.MaxProgressBytes // no more after it
		return starlark.None, nil
	}
	st.progressOut += n
	st.call.Progress(gv)
	return starlark.None, nil
}

func noLoad(_ *starlark.Thread, module string) (starlark.StringDict, error) {
	return nil, fmt.Errorf("cannot load %q: scripted tools cannot load other files", module)
}

// runKind says why a run ended in error.
type runKind int

const (
	kindRuntime runKind = iota
	kindFail
	kindSteps
	kindTime
	kindCanceled
	kindMemory
)

// runError is the error of a run of script code, before the tool's name is
// put in front of it.
type runError struct {
	kind runKind
	pos  string // innermost script position, "code:3:7"
	msg  string
	back string // "code:9:3 in execute, code:3:7 in helper"
}

func (e *runError) Error() string {
	var b strings.Builder
	if e.pos != "" && e.kind != kindFail {
		b.WriteString(e.pos)
		b.WriteString(": ")
	}
	b.WriteString(e.msg)
	if e.back != "" && (e.kind == kindRuntime || e.kind == kindMemory) {
		b.WriteString(" (backtrace: ")
		b.WriteString(e.back)
		b.WriteString(")")
	}
	return b.String()
}

// run calls fn with args in a fresh thread under the limits of env, and
// turns every way it can end in error into a *runError.
func run(ctx context.Context, st *callState, fn starlark.Value, args ...starlark.Value) (starlark.Value, error) {
	thread, finish := newThread(ctx, st)
	v, err := starlark.Call(thread, fn, starlark.Tuple(args), nil)
	return v, finish(err)
}

// initProgram runs the top-level code of prog under the limits of env.
func initProgram(ctx context.Context, st *callState, prog *starlark.Program) (starlark.StringDict, error) {
	thread, finish := newThread(ctx, st)
	g, err := prog.Init(thread, predeclared)
	return g, finish(err)
}

// newThread returns a sandboxed thread for one run, and the function that
// must be called with the run's error when it ends: it releases the
// thread's timer and explains the error.
func newThread(ctx context.Context, st *callState) (*starlark.Thread, func(error) error) {
	env := st.env
	ctx, cancel := context.WithTimeoutCause(ctx, env.Timeout, errTimeLimit)
	st.ctx = ctx
	thread := &starlark.Thread{
		Name: st.tool,
		Load: noLoad,
		Print: func(_ *starlark.Thread, msg string) {
			if env.Print != nil {
				env.Print(st.tool, msg)
			}
		},
	}
	overSteps := false
	thread.OnMaxSteps = func(t *starlark.Thread) {
		overSteps = true
		t.Cancel("step limit")
	}
	thread.SetMaxExecutionSteps(env.MaxSteps)
	thread.SetLocal(stateKey, st)
	stop := context.AfterFunc(ctx, func() { thread.Cancel("stopped") })
	return thread, func(err error) error {
		stop()
		defer cancel()
		if err == nil {
			return nil
		}
		re := explain(err)
		switch {
		case overSteps:
			re.kind, re.pos, re.back, re.msg = kindSteps, "", "", fmt.Sprintf("script exceeded its limit of %d execution steps", env.MaxSteps)
		case ctx.Err() != nil && errors.Is(context.Cause(ctx), errTimeLimit):
			re.kind, re.pos, re.back, re.msg = kindTime, "", "", fmt.Sprintf("script exceeded its time limit of %v", env.Timeout)
		case ctx.Err() != nil:
			re.kind, re.pos, re.back, re.msg = kindCanceled, "", "", fmt.Sprintf("script stopped: %v", context.Cause(ctx))
		}
		return re
	}
}

var errTimeLimit = errors.New("time limit")

// explain turns an evaluation error into a runError with the position of
// the innermost script frame and a one-line backtrace.
func explain(err error) *runError {
	re := &runError{kind: kindRuntime, msg: err.Error()}
	var fe *failError
	if errors.As(err, &fe) {
		re.kind, re.msg = kindFail, fe.msg
	}
	var me *memError
	if errors.As(err, &me) {
		re.kind = kindMemory
	}
	var ee *starlark.EvalError
	if !errors.As(err, &ee) {
		return re
	}
	if re.kind != kindFail {
		re.msg = ee.Msg
		if cause := ee.Unwrap(); cause != nil {
			// A Go builtin's error: its own text, without the
			// evaluator's framing.
			re.msg = cause.Error()
		}
	}
	var frames []string
	for _, fr := range ee.CallStack {
		if fr.Pos.Filename() == "<builtin>" || !fr.Pos.IsValid() {
			continue
		}
		if fr.Name != "<toplevel>" {
			frames = append(frames, fmt.Sprintf("%s in %s", fr.Pos, fr.Name))
		}
		re.pos = fr.Pos.String()
	}
	if len(frames) > 1 {
		re.back = strings.Join(frames, ", ")
	}
	return re
}
