package orchestrator

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet/internal/retention"
)

// retainTimeout bounds one cut of a session's history (retain).
const retainTimeout = 10 * time.Second

// bounds returns the history bounds of the agent whose subjects hold the
// session's history.
func (s *session) bounds() retention.Bounds {
	n, b, age := s.agent.profile.HistoryBounds()
	return retention.Bounds{MaxRecords: n, MaxBytes: b, MaxAge: age}
}

// retainAfterRun starts a cut of the session's history to its agent's
// bounds (retain) when a run ended and the history is past one; s.mu not
// held.
func (s *session) retainAfterRun() {
	b := s.bounds()
	if b.None() || s.o.history == nil {
		return
	}
	s.mu.Lock()
	w, tally := s.writer, s.tally
	s.mu.Unlock()
	if w == nil {
		return
	}
	n, by := w.Stored()
	if !tally.Due(b, n, by, s.o.cfg.Now()) || !s.retaining.CompareAndSwap(false, true) {
		return
	}
	go s.retain(b)
}

// retain cuts the session's history once it is idle, as its owner
// (retention.Apply), holding s.mu so that no input starts a run
// meanwhile; after a cut it leaves memory, to be loaded again, bounded,
// with its next input. A session that is not idle by then is left for the
// next run's end.
func (s *session) retain(b retention.Bounds) {
	defer s.retaining.Store(false)
	ctx, cancel := context.WithTimeout(s.ctx, retainTimeout)
	defer cancel()
	if s.wait(ctx) != nil {
		return
	}
	s.mu.Lock()
	if !s.loaded || s.evicted.Load() || s.stopped != nil || s.waiting > 0 || len(s.backlog) > 0 || s.loop.Running() || s.holds() != nil {
		s.mu.Unlock()
		return
	}
	res, err := retention.Apply(ctx, s.o.history, s.writer, s.agent.profile.Name, s.name, b, s.o.cfg.Now())
	if res.Stored {
		s.evicted.Store(true)
	}
	s.mu.Unlock()
	d := res.Decision
	if res.Stored {
		s.o.log.Info("session history cut to its bounds", "agent", s.agent.profile.Name, "session", s.name,
			"runs", d.Retained.Runs, "records", d.Retained.Records, "first_seq", d.Keep, "within", d.Met, "purged", res.Purged)
		s.o.forget(s)
		s.cancel(context.Canceled)
	}
	if err != nil {
		s.o.log.Warn("session history not cut", "agent", s.agent.profile.Name, "session", s.name, "err", err)
		if !res.Stored {
			s.fenced(err)
		}
	}
}
