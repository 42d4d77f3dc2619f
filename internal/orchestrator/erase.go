package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/erase"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/agentfleet/agentfleet/internal/inputpolicy"
)

// errErased is why a deleted session stopped.
var errErased = bus.ErrDeleted

// eraseConfig wires the delete of sessions (package erase) to this
// orchestrator: its streams and objects, its members, and stopErased.
func (o *Orchestrator) eraseConfig() erase.Config {
	return erase.Config{
		Subjects: o.subjects, Self: o.id, Agent: o.CheckAgent, Replies: o.replies, Logger: o.log, Stop: o.stopErased, Tombstones: &o.tombs,
		Deleter: &erase.Deleter{Subjects: o.subjects, NC: o.nc, JS: o.durable.JetStream(), Objects: o.objects, Settle: cmp.Or(o.cfg.LeaseTTL, partition.DefaultTTL), Self: o.id, Replicas: o.durable.Config().Replicas,
			Members: func() []string {
				if t := o.partitions(); t != nil {
					return t.Members()
				}
				return nil
			}},
	}
}

// stopErased stops session of agent for its delete, if it is in memory
// here: it leaves memory, its events are dropped from now on, its run
// stops without ending, nothing more of it is stored, and the input that
// waits on it is refused. It returns once its load and run stopped, with
// the runs that had not ended (their calls may still be on workers).
func (o *Orchestrator) stopErased(ctx context.Context, agent, session string) (bool, []string, error) {
	o.mu.Lock()
	s := o.sessions[agent+"."+session]
	o.mu.Unlock()
	if s == nil {
		return false, nil, nil
	}
	s.erased.Store(true)
	o.forget(s)
	s.suspend(errErased, inputpolicy.Refuse)
	select {
	case <-s.ready:
	case <-ctx.Done():
		return true, nil, fmt.Errorf("its load did not stop: %w", context.Cause(ctx))
	}
	if err := s.wait(ctx); err != nil {
		return true, nil, fmt.Errorf("its run did not stop: %w", err)
	}
	o.log.Info("session stopped to be deleted", "agent", agent, "session", session)
	return true, s.unended(), nil
}

// unended returns the runs of the session's messages that have not ended.
func (s *session) unended() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var runs []string
	for m := range s.msgs.Values() {
		if m.run != "" && !s.hasEnded(m.run) && !slices.Contains(runs, m.run) {
			runs = append(runs, m.run)
		}
	}
	return runs
}
