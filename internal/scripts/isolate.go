package scripts

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/script"
)

// The bounded builtins stop the bombs that are known; a bug of a builtin that
// no bound foresaw (a Go stack overflow, a runaway allocation) would still
// kill the process that runs it, and a Go fatal error cannot be recovered.
// With process isolation a script worker runs every check, call and dry run
// in a child process of its own (the worker's own executable, started
// again), whose address space is limited with setrlimit(RLIMIT_AS) to what
// it mapped at its start plus a margin (see setAddressSpaceLimit): what
// kills the child is one error result, and the worker serves on.
//
// The child speaks JSON lines: the parent writes one childRequest on its
// standard input; the child writes progress, print and call_tool messages
// and finally one "done" on its standard output; the parent answers each
// call_tool with a childToolResult. call_tool runs in the parent, with the
// caller's permissions and the worker's connection.

// Isolation modes of ServerConfig.Isolation.
const (
	// IsolationNone runs scripts in the worker's process (the default).
	IsolationNone = ""
	// IsolationProcess runs each check, call and dry run in a child
	// process with a limited address space.
	IsolationProcess = "process"
)

// DefaultChildAddressSpace is how much address space a child process may
// map beyond what it mapped at its start: room for the default memory
// budget several times over.
const DefaultChildAddressSpace = 1 << 30

// childEnvVar marks a process started as a script child; its value is the
// address-space limit in bytes.
const childEnvVar = "AGENTFLEET_SCRIPT_CHILD"

// childRequest is the one request a child reads.
type childRequest struct {
	Mode       string               `json:"mode"` // "check", "call" or "dryrun"
	Definition *script.Definition   `json:"definition"`
	Limits     childLimits          `json:"limits"`
	Call       *agentfleet.ToolCall `json:"call,omitempty"`
	Depth      int                  `json:"depth,omitempty"`
}

// childLimits are the limits of script.Env.
type childLimits struct {
	MaxSteps       uint64        `json:"max_steps"`
	Timeout        time.Duration `json:"timeout"`
	MaxMemory      int64         `json:"max_memory"`
	MaxResultBytes int           `json:"max_result_bytes"`
	MaxDepth       int           `json:"max_depth"`
	// MaxProgressBytes 0 (omitted) is the default.
	MaxProgressBytes int `json:"max_progress_bytes,omitempty"`
}

// childMessage is one line a child writes.
type childMessage struct {
	Progress any                  `json:"progress,omitempty"`
	Print    string               `json:"print,omitempty"`
	CallTool *agentfleet.ToolCall `json:"call_tool,omitempty"`
	Done     *childDone           `json:"done,omitempty"`
}

type childDone struct {
	Result *agentfleet.ToolResult `json:"result,omitempty"`
	Error  *ErrorReply            `json:"error,omitempty"`
}

// childToolResult answers a child's call_tool.
type childToolResult struct {
	Result *agentfleet.ToolResult `json:"result,omitempty"`
	Error  string                 `json:"error,omitempty"`
}

// RunChildIfRequested runs this process as a script child when it was
// started as one (see the isolation comment above), and exits; otherwise it
// returns at once. Programs that run script workers with process isolation
// call it first thing in main, and test binaries in TestMain.
func RunChildIfRequested() {
	limit, ok := os.LookupEnv(childEnvVar)
	if !ok {
		return
	}
	if err := runChild(limit, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "script child:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func runChild(limit string, in io.Reader, out io.Writer) error {
	if n, err := strconv.ParseUint(limit, 10, 64); err == nil && n > 0 {
		if err := setAddressSpaceLimit(n); err != nil {
			return err
		}
	}
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	var req childRequest
	// Numbers stay exact: an integer argument must reach the script as
	// the integer it was.
	d := json.NewDecoder(strings.NewReader(string(line)))
	d.UseNumber()
	if err := d.Decode(&req); err != nil || req.Definition == nil {
		return fmt.Errorf("the request is not a child request: %v", err)
	}
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(m *childMessage) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(m)
	}
	env := script.Env{
		MaxSteps: req.Limits.MaxSteps, Timeout: req.Limits.Timeout, MaxMemory: req.Limits.MaxMemory,
		MaxResultBytes: req.Limits.MaxResultBytes, MaxDepth: req.Limits.MaxDepth, MaxProgressBytes: req.Limits.MaxProgressBytes,
		Print: func(_, msg string) { send(&childMessage{Print: msg}) },
		// One call_tool at a time: a script is one thread.
		CallTool: func(ctx context.Context, call *agentfleet.ToolCall) (*agentfleet.ToolResult, error) {
			if err := send(&childMessage{CallTool: call}); err != nil {
				return nil, err
			}
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, fmt.Errorf("call_tool(%q): the worker did not answer: %w", call.Name, err)
			}
			var res childToolResult
			if err := json.Unmarshal(line, &res); err != nil {
				return nil, fmt.Errorf("call_tool(%q): %w", call.Name, err)
			}
			if res.Error != "" {
				return nil, errors.New(res.Error)
			}
			return res.Result, nil
		},
	}
	ctx := context.Background()
	done := &childDone{}
	switch req.Mode {
	case "check":
		_, err = script.New(req.Definition, env)
	case "dryrun":
		err = script.DryRun(ctx, req.Definition, env)
	case "call":
		var t *agentfleet.Tool
		if t, err = script.New(req.Definition, env); err == nil {
			t, err = script.WithChecks(t)
		}
		if err == nil && req.Call != nil {
			call := &agentfleet.Call{ID: req.Call.ID, Name: req.Call.Name, Arguments: req.Call.Arguments,
				Progress: func(p any) { send(&childMessage{Progress: p}) }}
			done.Result, err = t.Handler.Call(script.WithCallDepth(ctx, req.Depth), call)
		}
	default:
		err = fmt.Errorf("unknown mode %q", req.Mode)
	}
	if err != nil {
		done.Error = NewErrorReply(err)
	}
	return send(&childMessage{Done: done})
}

// ProcessRunner runs scripts in child processes (IsolationProcess): each
// check, dry run and call in a child of its own.
type ProcessRunner struct {
	exe   string // the executable to start
	limit uint64 // RLIMIT_AS of a child
	env   script.Env
}

// NewProcessRunner returns a runner whose children run scripts with env
// (its CallTool and Print run in this process) and an address space of
// limit bytes beyond what they mapped at their start; 0 means
// DefaultChildAddressSpace. It fails when this process's executable cannot
// be found.
func NewProcessRunner(env script.Env, limit uint64) (*ProcessRunner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("process isolation: %w", err)
	}
	if limit == 0 {
		limit = DefaultChildAddressSpace
	}
	return &ProcessRunner{exe: exe, limit: limit, env: env}, nil
}

// run starts a child for req and serves it until it is done: progress and
// print go to call (when given) and env.Print, call_tool to env.CallTool.
// The child is killed when ctx ends or it outlives three time limits
// (prepare, validate and execute), and its death is an error that says
// how it died.
func (p *ProcessRunner) run(ctx context.Context, req *childRequest, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
	env := p.env
	req.Limits = childLimits{MaxSteps: env.MaxSteps, Timeout: env.Timeout, MaxMemory: env.MaxMemory, MaxResultBytes: env.MaxResultBytes, MaxDepth: env.MaxDepth, MaxProgressBytes: env.MaxProgressBytes}
	timeout := env.Timeout
	if timeout <= 0 {
		timeout = script.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, 3*timeout+time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.exe)
	cmd.Env = append(os.Environ(), childEnvVar+"="+strconv.FormatUint(p.limit, 10))
	stderr := &tailBuffer{max: 2048}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: starting the script's process: %w", req.Definition.Name, err)
	}
	done, serveErr := p.serve(ctx, req, call, stdin, stdout)
	stdin.Close()
	waitErr := cmd.Wait()
	if done == nil {
		if ctx.Err() != nil && serveErr == nil {
			serveErr = ctx.Err()
		}
		return nil, &childDied{tool: req.Definition.Name, wait: waitErr, serve: serveErr, stderr: stderr.String()}
	}
	if err := done.Error.Err(); err != nil {
		return nil, err
	}
	return done.Result, nil
}

func (p *ProcessRunner) serve(ctx context.Context, req *childRequest, call *agentfleet.Call, stdin io.Writer, stdout io.Reader) (*childDone, error) {
	enc := json.NewEncoder(stdin)
	if err := enc.Encode(req); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bufio.NewReader(stdout))
	// The child bounds its progress; the parent holds it to the same
	// bound, so that a child gone wrong cannot flood the bus either.
	progressLimit := p.env.MaxProgressBytes
	if progressLimit <= 0 {
		progressLimit = script.DefaultMaxProgressBytes
	}
	progressOut := 0
	for {
		var m childMessage
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		switch {
		case m.Done != nil:
			return m.Done, nil
		case m.CallTool != nil:
			var ans childToolResult
			if p.env.CallTool == nil {
				ans.Error = "call_tool is not available here"
			} else if res, err := p.env.CallTool(ctx, m.CallTool); err != nil {
				ans.Error = err.Error()
			} else {
				ans.Result = res
			}
			if err := enc.Encode(&ans); err != nil {
				return nil, err
			}
		case m.Progress != nil:
			if call == nil || call.Progress == nil || progressOut >= progressLimit {
				continue
			}
			b, err := json.Marshal(m.Progress)
			if err != nil || len(b) > progressLimit-progressOut {
				progressOut = progressLimit // no more after it
				continue
			}
			progressOut += len(b)
			call.Progress(m.Progress)
		case m.Print != "":
			if p.env.Print != nil {
				p.env.Print(req.Definition.Name, m.Print)
			}
		}
	}
}

// childDied is the error of a child that ended without an answer.
type childDied struct {
	tool   string
	wait   error
	serve  error
	stderr string
}

func (e *childDied) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: the process running the script died", e.tool)
	if e.wait != nil {
		fmt.Fprintf(&b, " (%v)", e.wait)
	}
	if line := fatalLine(e.stderr); line != "" {
		fmt.Fprintf(&b, ": %s", line)
	} else if e.serve != nil && !errors.Is(e.serve, io.EOF) {
		fmt.Fprintf(&b, ": %v", e.serve)
	}
	return b.String()
}

func (e *childDied) Unwrap() error { return e.serve }

// fatalLine picks the line of a Go crash that says what happened ("fatal
// error: stack overflow", "runtime: out of memory: ...").
func fatalLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "runtime: out of memory") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "script child:") {
			return l
		}
	}
	return ""
}

// tailBuffer keeps the first max bytes written to it: a crashing Go
// program's first lines say why, the rest are goroutine stacks.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Check checks def in a child, as script.New and script.WithChecks do in
// this process.
func (p *ProcessRunner) Check(ctx context.Context, def *script.Definition) error {
	_, err := p.run(ctx, &childRequest{Mode: "check", Definition: def}, nil)
	return err
}

// DryRun dry-runs def in a child, as script.DryRun does in this process.
func (p *ProcessRunner) DryRun(ctx context.Context, def *script.Definition) error {
	_, err := p.run(ctx, &childRequest{Mode: "dryrun", Definition: def}, nil)
	return err
}

// Tool returns def served through child processes: its handler runs
// prepare, validate (or the schema) and execute in a child per call.
func (p *ProcessRunner) Tool(def *script.Definition) *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: def.ToolDef(),
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			c := &agentfleet.ToolCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments}
			return p.run(ctx, &childRequest{Mode: "call", Definition: def, Call: c, Depth: script.CallDepth(ctx, call.ID)}, call)
		}),
	}
}
