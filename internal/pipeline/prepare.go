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
func (p *Pipeline) Prepare(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, call agentfleet.ToolCall) (*Prepared, *Outcome) {
	prep, out := p.prepare(ctx, pctx, call)
	if out != nil {
		return nil, out
	}
	if out := p.before(ctx, pctx, assistant, prep); out != nil {
		return nil, out
	}
	return prep, nil
}

// prepare is Prepare without the before hook.
func (p *Pipeline) prepare(ctx context.Context, pctx *Context, call agentfleet.ToolCall) (prepared *Prepared, out *Outcome) {
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
	timeout := tool.Timeout()
	if timeout <= 0 {
		timeout = p.cfg.DefaultTimeout
	}
	prep := &Prepared{
		Tool: tool, Call: call, Args: args, Timeout: timeout,
		Agent: p.cfg.Agent, Session: p.cfg.Session, RunID: p.cfg.RunID,
	}
	if tool.Scripted {
		if p.cfg.Nested != nil {
			prep.Allowed, prep.Gated = p.cfg.Nested(pctx.Tools.List())
		} else {
			prep.Allowed = pctx.Tools.Names()
		}
	}
	return prep, nil
}

// before runs the before hook on a prepared call, which it may edit; a
// non-nil outcome means the call does not run. It never panics on a faulty
// hook.
func (p *Pipeline) before(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, prep *Prepared) (out *Outcome) {
	if p.cfg.Before == nil {
		return nil
	}
	call := prep.Call
	defer func() {
		if v := recover(); v != nil {
			out = errorOutcome(call, Failed, fmt.Sprintf("Tool %s: preparing the call panicked: %v", call.Name, v))
		}
	}()
	sink := p.cfg.Sink
	if sink == nil {
		sink = agentfleet.EventSinkFunc(func(*agentfleet.Event) {})
	}
	before, err := p.cfg.Before(ctx, &BeforeContext{
		Assistant: assistant, Call: call, Args: prep.Args, Context: pctx, Tool: prep.Tool,
		Agent: p.cfg.Agent, Session: p.cfg.Session, RunID: p.cfg.RunID, Sink: sink,
	})
	if ctx.Err() != nil {
		return errorOutcome(call, Aborted, AbortedText)
	}
	if err != nil {
		return errorOutcome(call, Blocked, err.Error())
	}
	if before == nil {
		return nil
	}
	if before.Result != nil {
		kind := OK
		if before.IsError {
			kind = Failed
		}
		return &Outcome{Call: call, Result: before.Result, IsError: before.IsError, Kind: kind}
	}
	if before.Block {
		reason := before.Reason
		if reason == "" {
			reason = "Tool execution was blocked"
		}
		return errorOutcome(call, Blocked, reason)
	}
	if before.Args != nil {
		if err := pctx.Tools.ValidateArguments(call.Name, before.Args); err != nil {
			return errorOutcome(call, Invalid, fmt.Sprintf("Tool %s: edited arguments: %v", call.Name, err))
		}
		prep.Args = before.Args
	}
	return nil
}
