package loop

import (
	"context"

	"github.com/agentfleet/agentfleet"
)

// Request is what the model is asked for one turn: the output of the format
// hook (spec formatMsgForLLM), still independent of any provider. The model
// adapter converts it to its provider's wire form.
type Request struct {
	// Model names the model to use; empty means the adapter's default.
	Model        string
	SystemPrompt string
	Messages     []agentfleet.Message
	Tools        []agentfleet.ToolDef
	// Agent and Session identify the caller, for logs and rate limits.
	Agent   string
	Session string
	// Priority is the run's priority for a shared quota ("interactive",
	// "batch"; empty: the quota's default), from Config.Priority or the
	// run's input.
	Priority string
	// EstimatedTokens is the session's estimate of the request's input
	// tokens (calibrated by earlier usage), set by the loop before each
	// call, for a tokens-per-minute quota; 0: unknown.
	EstimatedTokens int
}

type notifyKey struct{}

// WithNotify returns ctx carrying f as the receiver of Notify: the loop
// sets it on the context of each model call; tests of model adapters set
// their own.
func WithNotify(ctx context.Context, f func(*agentfleet.Event)) context.Context {
	return context.WithValue(ctx, notifyKey{}, f)
}

// Notify emits e, an event about the model call whose ctx is given (such
// as model.waiting), among the events of that call's run, envelope filled
// in; outside a run's model call it does nothing. A model adapter calls it
// from Complete.
func Notify(ctx context.Context, e *agentfleet.Event) {
	if f, ok := ctx.Value(notifyKey{}).(func(*agentfleet.Event)); ok && e != nil {
		f(e)
	}
}

// DeltaFunc receives the text of a response as it streams.
type DeltaFunc func(delta string)

// Model calls a language model (spec llmCall).
//
// Complete returns the assistant message of one model call. Tool calls are
// content blocks of type tool_call whose Arguments hold the model's argument
// text as a JSON string (or a JSON object); StopReason is stop, tool_use or
// length. onDelta, which may be nil, receives text deltas as they arrive.
// Complete returns an error only when the call failed for good, after the
// adapter's own retries; ctx cancellation must stop it promptly.
type Model interface {
	Complete(ctx context.Context, req *Request, onDelta DeltaFunc) (*agentfleet.AssistantMessage, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc func(ctx context.Context, req *Request, onDelta DeltaFunc) (*agentfleet.AssistantMessage, error)

// Complete implements Model.
func (f ModelFunc) Complete(ctx context.Context, req *Request, onDelta DeltaFunc) (*agentfleet.AssistantMessage, error) {
	return f(ctx, req, onDelta)
}
