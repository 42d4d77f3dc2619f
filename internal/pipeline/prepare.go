package pipeline

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet"
)

// AbortedText is the text of the result of a call stopped by an abort.
const AbortedText = "Operation aborted"

// Prepare resolves the tool of call, prepares and validates its arguments
// and runs the before hook (spec prepareToolCall). It returns either a
// prepared call or, when the call cannot run, an error outcome; it never
// panics on a faulty hook.
func (p *Pipeline) Prepare(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, call agentfleet.ToolCall) (prepared *Prepared, out *Outcome) {
	defer func() {
		if v := recover(); v != nil {
			prepared, out = nil, errorOutcome(call, Failed, fmt.Sprintf("Tool %s: preparing the call panicked: %v", call.Name, v))
		}
	}()
	if ctx.Err() != nil {
		return nil, errorOutcome(call, Aborted, AbortedText)
	}
	if pctx == nil || pctx.Tools == nil {
		return nil, errorOutcome(call, NotFound, fmt.Sprintf("Tool %s not found", call.Name))
	}
	tool, ok := pctx.Tools.Get(call.Name)
	if !ok {
		return nil, errorOutcome(call, NotFound, fmt.Sprintf("Tool %s not found", call.Name))
	}
	if call.ArgumentsError != "" {
		return nil, errorOutcome(call, Invalid, fmt.Sprintf("Tool %s: %s", call.Name, call.ArgumentsError))
	}
	args := call.Arguments
	if args == nil {
		args = map[string]any{}
	}
	if tool.PrepareArguments != nil {
		prepared, err := tool.PrepareArguments(args)
		if err != nil {
			return nil, errorOutcome(call, Invalid, fmt.Sprintf("Tool %s: preparing arguments: %v", call.Name, err))
		}
		if prepared != nil {
			args = prepared
		}
	}
	if err := pctx.Tools.ValidateArguments(call.Name, args); err != nil {
		return nil, errorOutcome(call, Invalid, fmt.Sprintf("Tool %s: %v", call.Name, err))
	}
	if p.cfg.Before != nil {
		before, err := p.cfg.Before(ctx, &BeforeContext{Assistant: assistant, Call: call, Args: args, Context: pctx})
		if ctx.Err() != nil {
			return nil, errorOutcome(call, Aborted, AbortedText)
		}
		if err != nil {
			return nil, errorOutcome(call, Blocked, err.Error())
		}
		if before != nil && before.Block {
			reason := before.Reason
			if reason == "" {
				reason = "Tool execution was blocked"
			}
			return nil, errorOutcome(call, Blocked, reason)
		}
	}
	timeout := tool.Timeout()
	if timeout <= 0 {
		timeout = p.cfg.DefaultTimeout
	}
	prep := &Prepared{
		Tool: tool, Call: call, Args: args, Timeout: timeout,
		Agent: p.cfg.Agent, Session: p.cfg.Session, RunID: p.cfg.RunID,
	}
	if tool.Scripted {
		prep.Allowed = pctx.Tools.Names()
	}
	return prep, nil
}
