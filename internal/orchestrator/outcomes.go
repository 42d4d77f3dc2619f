package orchestrator

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// openOutcomes opens the bucket of recorded outcomes. Without it, calls
// in flight of tools that are not idempotent stay of unknown outcome when
// their runs resume, as before there was one: a warning, not a failure.
func (o *Orchestrator) openOutcomes(ctx context.Context, replicas int) {
	cfg := o.cfg.Outcomes
	if cfg.Replicas <= 0 {
		cfg.Replicas = replicas
	}
	out, err := toolrpc.OpenOutcomes(ctx, o.durable.JetStream(), cfg)
	if err != nil {
		o.log.Warn("the bucket of recorded outcomes cannot be opened: calls in flight of tools not marked idempotent are of unknown outcome when their runs resume", "bucket", toolrpc.OutcomeBucket, "err", err)
		return
	}
	o.outcomes = out
}

// recoverer returns the loop's Recover hook, nil without the bucket; it
// waits for a call still running at most timeout when the tool has none.
func (o *Orchestrator) recoverer(timeout time.Duration) pipeline.BeforeHook {
	if o.outcomes == nil || o.fleet == nil {
		return nil
	}
	return fleetexec.Recoverer{Outcomes: o.outcomes, Alive: o.fleet.Has, Timeout: timeout, Logger: o.log}.Hook
}
