package fleetexec

import (
	"context"
	"errors"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// Executor is a pipeline.Executor that runs every call on the fleet
// through Client.
type Executor struct {
	// Client sends the calls; it must not be nil.
	Client *toolrpc.ToolClient
	// Fence, when its Epoch is not 0, is the ownership fence of the
	// session whose calls this executor runs: every call carries it, and
	// a worker that saw a later claim of the partition refuses the call.
	Fence ownership.Fence
	// Fenced, if set, is told (on the call's goroutine) each time a
	// worker refused a call as fenced (toolrpc.ErrFenced): the session is
	// another orchestrator's now, and its owner here should step down.
	Fenced func(err error)
}

var _ pipeline.Executor = Executor{}

// Execute implements pipeline.Executor: it runs prep on the fleet, telling
// the pipeline when its request is sent (prep is the call's Notifier), and
// returns the client's result, or its error as Err makes it.
func (e Executor) Execute(ctx context.Context, prep *pipeline.Prepared, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
	call := Call(prep)
	call.Notify = prep
	call.Fence = e.Fence
	res, err := e.Client.Execute(ctx, &call, progress)
	if e.Fenced != nil && errors.Is(err, toolrpc.ErrFenced) {
		e.Fenced(err)
	}
	return res, Err(err)
}

// Call returns the plain call the tool client sends for prep: its id,
// name, arguments, timeout, whether its tool may be retried (idempotent or
// read-only), and on whose behalf it runs. Notify is left nil.
func Call(prep *pipeline.Prepared) toolrpc.Call {
	return toolrpc.Call{
		ID: prep.Call.ID, Name: prep.Call.Name, Args: prep.Args, Timeout: prep.Timeout,
		Retryable: prep.Tool != nil && (prep.Tool.Annotations.Idempotent || prep.Tool.Annotations.ReadOnly),
		Agent:     prep.Agent, Session: prep.Session, RunID: prep.RunID, Allowed: prep.Allowed, Gated: prep.Gated,
	}
}
