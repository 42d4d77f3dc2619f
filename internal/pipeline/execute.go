package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet"
)

// Executed is a call after execution, before finalization (spec
// executedOutcome).
type Executed struct {
	Result  *agentfleet.ToolResult
	IsError bool
	Kind    Kind
}

// Execute runs a prepared call (spec executePreparedToolCall): in-process
// when the tool has a Handler, else through the configured Executor. Partial
// results become tool.update events. An error or a panic becomes an error
// result; cancellation of ctx yields an "Operation aborted" result.
func (p *Pipeline) Execute(ctx context.Context, prep *Prepared) (ex Executed) {
	progress := func(partial any) { prep.progress(p, partial) }
	defer prep.executed()
	defer func() {
		if v := recover(); v != nil {
			ex = Executed{Result: agentfleet.ErrorResult(fmt.Sprintf("Tool %s panicked: %v", prep.Call.Name, v)), IsError: true, Kind: Failed}
		}
	}()

	exec := p.cfg.Executor
	if prep.Tool.Handler != nil {
		exec = Local
		prep.Sent() // nothing is sent: the call starts here
	}
	if exec == nil {
		return Executed{Result: agentfleet.ErrorResult(fmt.Sprintf("Tool %s has no executor", prep.Call.Name)), IsError: true, Kind: Failed}
	}
	res, err := exec.Execute(ctx, prep, progress)
	switch {
	case err != nil && ctx.Err() != nil && !errors.Is(err, ErrTimeout):
		return Executed{Result: agentfleet.ErrorResult(AbortedText), IsError: true, Kind: Aborted}
	case err != nil:
		if re, ok := errors.AsType[*ResultError](err); ok && re.Result != nil {
			return Executed{Result: re.Result, IsError: true, Kind: Failed}
		}
		return Executed{Result: agentfleet.ErrorResult(err.Error()), IsError: true, Kind: kindOf(err)}
	case res == nil:
		return Executed{Result: &agentfleet.ToolResult{Content: []agentfleet.Content{}}, Kind: OK}
	}
	return Executed{Result: res, Kind: OK}
}

// Local runs tools in-process through their Handler, bounded by the call's
// timeout.
var Local Executor = ExecutorFunc(executeLocal)

func executeLocal(ctx context.Context, prep *Prepared, progress ProgressFunc) (*agentfleet.ToolResult, error) {
	if prep.Tool.Handler == nil {
		return nil, fmt.Errorf("Tool %s has no in-process handler", prep.Call.Name)
	}
	if prep.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, prep.Timeout, ErrTimeout)
		defer cancel()
	}
	res, err := prep.Tool.Handler.Call(ctx, &agentfleet.Call{
		ID: prep.Call.ID, Name: prep.Call.Name, Arguments: prep.Args, Progress: progress,
	})
	if err != nil && errors.Is(context.Cause(ctx), ErrTimeout) {
		return nil, fmt.Errorf("Tool %s: %w after %v", prep.Call.Name, ErrTimeout, prep.Timeout)
	}
	return res, err
}
