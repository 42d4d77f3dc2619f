package fleetexec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// Recoverer answers, from the outcomes workers record (toolrpc.Outcomes),
// what became of a call of a tool that is not idempotent that a resumed
// run finds without a result: its Hook is a loop.Config.Recover.
type Recoverer struct {
	// Outcomes is the outcome bucket; required.
	Outcomes *toolrpc.Outcomes
	// Alive reports whether the worker of an instance id is in the fleet
	// (fleet.Fleet.Has); required.
	Alive func(workerID string) bool
	// Timeout bounds the wait for a call a live worker still runs, when
	// its tool has no timeout of its own; default 60s.
	Timeout time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// RecoveredText is the error result of a call that finished on its worker
// with a result too large to record: it ran, and what it returned is lost.
const RecoveredText = "Tool %s: the orchestrator stopped while this call was in flight; it finished on worker %s with a result of %d bytes, too large to record, so what it returned is unknown, and it was not run again"

// Hook returns the recorded result of the call in as a
// pipeline.BeforeResult, and says so on the call's events (a tool.update
// {"recovered": {"worker"}}) and in the log; a call whose result was too
// large to record is blocked with RecoveredText. It returns nil when the
// outcome is unknown, with the reason logged.
func (r Recoverer) Hook(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	if in.Tool != nil && in.Tool.Timeout() > 0 {
		timeout = in.Tool.Timeout()
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("the tool's timeout of %v passed", timeout))
	defer cancel()
	key := toolrpc.OutcomeKey(in.Session, in.RunID, in.Call.ID)
	attrs := []any{"session", in.Session, "run_id", in.RunID, "tool", in.Call.Name, "tool_call_id", in.Call.ID, "key", key}
	rec, err := r.Outcomes.Recover(ctx, key, r.Alive)
	if err != nil {
		if !errors.Is(err, toolrpc.ErrOutcomeUnknown) || ctx.Err() == nil {
			log.Info("the outcome of a call in flight is unknown", append(attrs, "reason", err)...)
		} else {
			log.Warn("the outcome of a call in flight is unknown", append(attrs, "reason", err)...)
		}
		return nil, nil
	}
	in.Sink.Emit(&agentfleet.Event{Type: agentfleet.EventToolUpdate, ToolCallID: in.Call.ID, ToolName: in.Call.Name,
		Worker: rec.Worker, Partial: map[string]any{"recovered": map[string]any{"worker": rec.Worker, "size": rec.Size, "omitted": rec.Omitted}}})
	if rec.Omitted {
		log.Warn("a call in flight finished with a result too large to record", append(attrs, "worker", rec.Worker, "size", rec.Size)...)
		return &pipeline.BeforeResult{Block: true, Reason: fmt.Sprintf(RecoveredText, in.Call.Name, rec.Worker, rec.Size)}, nil
	}
	log.Info("recovered the outcome of a call in flight from its worker's record", append(attrs, "worker", rec.Worker, "is_error", rec.IsError)...)
	rec.Result.Worker = rec.Worker
	return &pipeline.BeforeResult{Result: rec.Result, IsError: rec.IsError}, nil
}
