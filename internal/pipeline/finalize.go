package pipeline

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet"
)

// Finalize runs the after hook over an executed call (spec
// finalizeExecutedToolCall). The hook may override content, details, usage,
// terminate and is-error, field by field; an error or a panic in the hook
// becomes an error result.
func (p *Pipeline) Finalize(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, prep *Prepared, ex Executed) (out *Outcome) {
	out = &Outcome{Call: prep.Call, Result: ex.Result, IsError: ex.IsError, Kind: ex.Kind}
	if p.cfg.After == nil {
		return out
	}
	defer func() {
		if v := recover(); v != nil {
			out = errorOutcome(prep.Call, Failed, fmt.Sprintf("Tool %s: after-tool-call hook panicked: %v", prep.Call.Name, v))
		}
	}()
	after, err := p.cfg.After(ctx, &AfterContext{
		Assistant: assistant, Call: prep.Call, Args: prep.Args,
		Result: ex.Result, IsError: ex.IsError, Context: pctx,
	})
	if err != nil {
		return errorOutcome(prep.Call, Failed, fmt.Sprintf("Tool %s: after-tool-call hook: %v", prep.Call.Name, err))
	}
	if after == nil {
		return out
	}
	r := *ex.Result
	if after.Content != nil {
		r.Content = after.Content
	}
	if after.Details != nil {
		r.Details = after.Details
	}
	if after.Usage != nil {
		r.Usage = after.Usage
	}
	if after.Terminate != nil {
		r.Terminate = *after.Terminate
	}
	out.Result = &r
	if after.IsError != nil {
		out.IsError = *after.IsError
		if !out.IsError && out.Kind != OK {
			out.Kind = OK
		} else if out.IsError && out.Kind == OK {
			out.Kind = Failed
		}
	}
	return out
}
