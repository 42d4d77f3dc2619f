package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
	"github.com/agentfleet/agentfleet/internal/chaos/observe"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
)

// startSome starts NATS, the workers and the first n orchestrators, and
// waits until each is ready and an orchestrator serves (fleet.start, for
// part of the orchestrators).
func (f *fleet) startSome(ctx context.Context, n int) error {
	f.since = time.Now()
	for i, group := range [][]*proc.Proc{f.natsProcs(), f.workers, f.orchs[:n]} {
		for _, p := range group {
			if err := p.Start(); err != nil {
				return err
			}
		}
		for _, p := range group {
			if err := p.WaitReady(ctx); err != nil {
				return err
			}
		}
		if i == 0 {
			if err := f.waitCluster(ctx); err != nil {
				return err
			}
		}
	}
	for _, p := range f.orchs[:n] {
		if err := f.waitMarked(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// waitMarked waits until orchestrator p serves, restarting (and recording)
// the processes that exit meanwhile, as waitServing does: one may be
// ready, then fail to set up its streams and exit.
func (f *fleet) waitMarked(ctx context.Context, p *proc.Proc) error {
	return proc.WaitFor(ctx, proc.StartTimeout+3*f.cfg.ttl(), p.Name+" serving", func() (bool, error) {
		if err := f.supervise(ctx, f.since); err != nil {
			return false, err
		}
		return p.IsMarked(), nil
	})
}

// burstAt sends a long task to every session in a partition that
// orchestrator id owns now, and waits until each of those runs is in its
// tools (so in flight for a few hundred milliseconds more). It returns the
// partitions id owned. The trickle leaves those sessions alone until
// load.release, so that no later message joins the long task's run.
func burstAt(ctx context.Context, load *liveLoad, ev *observe.RunEvents, own *observe.Owners, sessions []string, id, tag string) ([]int, error) {
	parts := observe.OwnedBy(own.Snapshot(), id)
	var targets, msgs []string
	for _, s := range sessions {
		if slices.Contains(parts, bus.Partition(agentName, s)) {
			targets = append(targets, s)
			msgs = append(msgs, longTask(fmt.Sprintf("%s-%s", tag, s)))
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("chaos: no session of %d is in the %d partitions of %s", len(sessions), len(parts), id)
	}
	load.hold(targets)
	if err := load.sendAll(ctx, targets, msgs); err != nil {
		return nil, fmt.Errorf("chaos: burst: %w", err)
	}
	err := proc.WaitFor(ctx, 20*time.Second, "the burst's runs to call their tools", func() (bool, error) {
		var waiting []string
		for _, m := range msgs {
			if !ev.ToolStarted(model.PlannedCalls(m)[1].ID) {
				waiting = append(waiting, m)
			}
		}
		return len(waiting) == 0, fmt.Errorf("not yet: %v", waiting)
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	return parts, nil
}
