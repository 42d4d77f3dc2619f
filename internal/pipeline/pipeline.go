// Package pipeline runs tool calls through the three phases of spec
// sections 8 to 12: prepare, execute and finalize, one call at a time or a
// batch in parallel. No phase returns a Go error: every call ends as exactly
// one tool result message, which the loop feeds back to the model.
package pipeline

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// Mode says how a batch of tool calls runs (spec agentLoopConfig.toolExecution).
type Mode string

// Execution modes. A parallel batch still runs sequentially when any tool in
// it is not parallel-safe (spec section 9).
const (
	Sequential Mode = "sequential"
	Parallel   Mode = "parallel"
)

// Context is the conversation snapshot a turn works on (spec agentContext).
// Messages may be shared with the session's history: hooks read it, and
// must not change its elements.
type Context struct {
	SystemPrompt string
	Messages     []agentfleet.Message
	Tools        *tools.Store
}

// Prepared is a call that passed preparation (spec preparedToolCall): the
// resolved tool, the original call and the validated arguments.
type Prepared struct {
	Tool *agentfleet.Tool
	Call agentfleet.ToolCall
	Args map[string]any
	// Timeout bounds the call: the tool's own, else the pipeline's default.
	Timeout time.Duration
	// Agent, Session and RunID say on whose behalf the call runs; executors
	// pass them on to workers for logs and de-duplication.
	Agent, Session, RunID string
	// Allowed lists the tools the calling agent may use, for scripted
	// tools, whose call_tool it bounds; nil for other tools.
	Allowed []string
	// Gated lists the tools of the calling agent left out of Allowed
	// because their calls need a person's decision (Config.Nested), so
	// that call_tool can say why it refuses them.
	Gated []string
	// start is the state of the call's tool.start event (start.go).
	start started
}

// ProgressFunc receives the partial results of a running call.
type ProgressFunc func(partial any)

// Executor runs prepared calls. A returned error becomes an error result
// carrying its text; cancellation of ctx is the abort signal. Errors that
// wrap ErrTimeout, ErrWorkerLost or ErrNoResponders are reported with that
// outcome.
type Executor interface {
	Execute(ctx context.Context, call *Prepared, progress ProgressFunc) (*agentfleet.ToolResult, error)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, call *Prepared, progress ProgressFunc) (*agentfleet.ToolResult, error)

// Execute implements Executor.
func (f ExecutorFunc) Execute(ctx context.Context, call *Prepared, progress ProgressFunc) (*agentfleet.ToolResult, error) {
	return f(ctx, call, progress)
}

// BeforeContext is what the before-tool-call hook sees (spec
// beforeToolCallContext).
type BeforeContext struct {
	Assistant *agentfleet.AssistantMessage
	Call      agentfleet.ToolCall
	Args      map[string]any
	Context   *Context
	// Tool is the resolved tool of the call.
	Tool *agentfleet.Tool
	// Agent, Session and RunID say on whose behalf the call runs.
	Agent, Session, RunID string
	// Sink receives events of the call in the run's sequence: the hook's
	// events come after the call's tool.start and before its tool.end. It
	// is never nil.
	Sink agentfleet.EventSink
}

// BeforeResult is the before-tool-call hook's answer. Block rejects the call;
// Reason, when set, is the text of the error result the model sees. Args,
// if set, replace the call's arguments (a person's edit); they are
// validated against the tool's schema again, and the call fails with an
// invalid-arguments result if they do not hold. Result, if set, is the
// call's result without executing it (an outcome its worker recorded, see
// loop.Config.Recover), an error result when IsError.
type BeforeResult struct {
	Block   bool
	Reason  string
	Args    map[string]any
	Result  *agentfleet.ToolResult
	IsError bool
}

// BeforeHook runs after validation and before execution (spec
// beforeToolCall). A nil result proceeds. An error blocks the call with the
// error's text. It may take its time (a person approves the call): in a
// parallel batch it runs for each call in the call's own goroutine, so the
// calls of one batch wait, and are decided, independently, and a waiting
// call holds no MaxParallel slot.
type BeforeHook func(ctx context.Context, in *BeforeContext) (*BeforeResult, error)

// AfterContext is what the after-tool-call hook sees (spec
// afterToolCallContext).
type AfterContext struct {
	Assistant *agentfleet.AssistantMessage
	Call      agentfleet.ToolCall
	Args      map[string]any
	Result    *agentfleet.ToolResult
	IsError   bool
	Context   *Context
}

// AfterResult overrides the result field by field: a nil field keeps the
// executed value (spec afterToolCall's merge).
type AfterResult struct {
	Content   []agentfleet.Content
	Details   map[string]any
	Usage     *agentfleet.Usage
	Terminate *bool
	IsError   *bool
}

// AfterHook runs after execution (spec afterToolCall). A nil result keeps
// the executed result; an error or a panic replaces it with an error result.
type AfterHook func(ctx context.Context, in *AfterContext) (*AfterResult, error)

// Config configures a Pipeline. The zero value is the spec's defaults:
// sequential execution, no hooks, in-process execution.
type Config struct {
	// Mode is Sequential (the default) or Parallel.
	Mode Mode
	// MaxParallel caps the calls of one parallel batch that execute at once.
	// Optional; default 16.
	MaxParallel int
	// Before and After are the hooks of spec section 14; both optional.
	Before BeforeHook
	After  AfterHook
	// Executor runs tools that have no in-process Handler. Optional; by
	// default such calls fail with an error result.
	Executor Executor
	// DefaultTimeout bounds calls whose tool sets none. Optional; default 60s.
	DefaultTimeout time.Duration
	// Sink receives tool.start, tool.update and tool.end events. Optional.
	Sink agentfleet.EventSink
	// MaxProgressBytes bounds the tool.update events of one call, by the
	// JSON size of their partial results and the arguments each carries:
	// past it, the call's updates are dropped, and one last tool.update
	// says how many ({"progress_dropped": {"updates", "limit_bytes"}}).
	// Optional; default DefaultMaxProgressBytes.
	MaxProgressBytes int64
	// Agent, Session and RunID are copied into every Prepared call.
	Agent, Session, RunID string
	// Nested splits the context's tools into those the call_tool of a
	// scripted tool may reach (Prepared.Allowed) and those it may not
	// because their calls wait for a person's decision (Prepared.Gated);
	// see approval.Policy.Nested. Optional; nil allows every tool of the
	// context, which is right only when no call needs approval.
	Nested func(tools []*agentfleet.Tool) (allowed, gated []string)
	// TraceContent puts each call's arguments and result text on its span,
	// when calls are traced (they may hold personal data).
	TraceContent bool
	// OnOutcome, if set, is called with each call's outcome as the call
	// ends, before its tool.end event, from the goroutine that ran it (in
	// parallel mode several at once); the loop stores each result there, so
	// that a crash mid-batch forgets no finished call.
	OnOutcome func(o *Outcome)
}

// Pipeline runs tool calls. It is safe for concurrent use.
type Pipeline struct {
	cfg Config
}

// DefaultMaxParallel and DefaultTimeout are the defaults of Config.
const (
	DefaultMaxParallel = 16
	DefaultTimeout     = 60 * time.Second
)

// New returns a pipeline for cfg.
func New(cfg Config) *Pipeline {
	if cfg.Mode == "" {
		cfg.Mode = Sequential
	}
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = DefaultMaxParallel
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = DefaultTimeout
	}
	if cfg.MaxProgressBytes <= 0 {
		cfg.MaxProgressBytes = DefaultMaxProgressBytes
	}
	return &Pipeline{cfg: cfg}
}

// Config returns the pipeline's configuration, defaults filled in.
func (p *Pipeline) Config() Config { return p.cfg }

func (p *Pipeline) emit(e *agentfleet.Event) {
	if p.cfg.Sink != nil {
		p.cfg.Sink.Emit(e)
	}
}
