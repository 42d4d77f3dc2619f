package agentfleet

import (
	"context"
	"encoding/json"
	"time"
)

// Annotations are hints about a tool's behaviour, as in MCP's tool
// annotations. The retry policy reads them: only idempotent or read-only
// tools are retried after a timeout or a lost worker.
type Annotations struct {
	ReadOnly    bool `json:"read_only,omitempty" msgpack:"read_only,omitempty"`
	Idempotent  bool `json:"idempotent,omitempty" msgpack:"idempotent,omitempty"`
	Destructive bool `json:"destructive,omitempty" msgpack:"destructive,omitempty"`
}

// ToolDef is the data of a tool definition: what the model sees and what the
// pipeline needs. It crosses the wire (in the workers' endpoint metadata).
type ToolDef struct {
	// Name is the unique key of the tool, a single NATS subject token.
	Name string `json:"name"`
	// Label is a human-readable title.
	Label string `json:"label,omitempty"`
	// Description is shown to the model to choose the tool.
	Description string `json:"description"`
	// InputSchema is a JSON Schema object for the arguments.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema optionally describes Details of the result.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  Annotations     `json:"annotations"`
	// Parallel says the tool may run concurrently with others of its batch
	// (spec parallelToolExecute). Default false: the batch runs sequentially.
	Parallel bool `json:"parallel,omitempty"`
	// TimeoutMS bounds one call, in milliseconds; zero means the agent's or
	// the system default.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Scripted marks a tool written with write_tool: its calls carry the
	// calling agent's allowed tools, which bound its call_tool.
	Scripted bool `json:"scripted,omitempty"`
}

// Timeout returns the tool's own call timeout, zero when it has none.
func (d *ToolDef) Timeout() time.Duration { return time.Duration(d.TimeoutMS) * time.Millisecond }

// Tool is a tool as a tool store holds it: its definition, its optional
// argument hooks and, for tools that run in the orchestrator's own process,
// its handler.
type Tool struct {
	ToolDef

	// PrepareArguments, if set, rewrites the arguments before validation
	// (spec prepareArguments).
	PrepareArguments func(args map[string]any) (map[string]any, error)
	// ValidateArguments, if set, replaces JSON Schema validation (spec
	// validateRequiredArgs). A non-nil error rejects the call with its text.
	ValidateArguments func(args map[string]any) error
	// Handler runs the tool in-process. When nil, the pipeline's executor
	// runs it (on the fleet).
	Handler Handler
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID        string         `json:"id" msgpack:"id"`
	Name      string         `json:"name" msgpack:"name"`
	Arguments map[string]any `json:"arguments" msgpack:"arguments"`
	// ArgumentsError is set when the model's arguments were not a JSON
	// object; the pipeline answers such a call with an error result.
	ArgumentsError string `json:"-" msgpack:"-"`
}

// ToolResult is what a tool returns (spec agentToolResult).
type ToolResult struct {
	Content   []Content      `json:"content" msgpack:"content"`
	Details   map[string]any `json:"details,omitempty" msgpack:"details,omitempty"`
	Usage     *Usage         `json:"usage,omitempty" msgpack:"usage,omitempty"`
	Terminate bool           `json:"terminate,omitempty" msgpack:"terminate,omitempty"`

	// Worker names the process that ran the call, when the executor knows.
	Worker string `json:"-" msgpack:"-"`
	// Attempts counts the attempts the executor made (1 when not retried).
	Attempts int `json:"-" msgpack:"-"`
}

// TextResult returns a result holding one text block.
func TextResult(text string) *ToolResult {
	return &ToolResult{Content: []Content{Text(text)}}
}

// ErrorResult returns the result of a failed call (spec createErrorToolResult):
// one text block with the message.
func ErrorResult(msg string) *ToolResult { return TextResult(msg) }

// Call is one call as a tool handler receives it.
type Call struct {
	ID        string
	Name      string
	Arguments map[string]any
	// Progress sends a partial result; it is never nil.
	Progress func(partial any)
}

// Handler executes tool calls. An error returned by Call becomes an error
// result carrying its text; cancellation of ctx is the abort signal.
type Handler interface {
	Call(ctx context.Context, call *Call) (*ToolResult, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, call *Call) (*ToolResult, error)

// Call implements Handler.
func (f HandlerFunc) Call(ctx context.Context, call *Call) (*ToolResult, error) {
	return f(ctx, call)
}
