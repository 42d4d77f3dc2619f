package orchestrator

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// retainTimeout bounds one cut of a session's history (trimAfter).
const retainTimeout = 10 * time.Second

// trimAfter cuts the session's history to its agent's bounds once run
// final's end is stored, as its owner, while no other run of the session
// goes on (retention.Keeper); the loop then drops the same runs from
// memory (loop.Trimmer), and the session forgets them.
func (s *session) trimAfter(final *agentfleet.AssistantMessage) (loop.Trim, bool) {
	s.mu.Lock()
	k, w := s.keeper, s.writer
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, retainTimeout)
	defer cancel()
	res, err := k.After(ctx, w, s.o.cfg.Now())
	if err != nil {
		s.o.log.Warn("session history not cut to its bounds", "agent", s.agent.profile.Name, "session", s.name, "run_id", final.RunID, "err", err)
		if !res.Stored {
			s.fenced(err)
		}
	}
	if !res.Stored {
		return loop.Trim{}, false
	}
	d := res.Decision
	s.o.log.Info("session history cut to its bounds", "agent", s.agent.profile.Name, "session", s.name,
		"runs", d.Retained.Runs, "records", d.Retained.Records, "first_seq", d.Keep, "within", d.Met, "purged", res.Purged)
	s.mu.Lock()
	for id := range d.Runs {
		if r := s.runs.get(id); r != nil {
			for _, m := range r.ids {
				if info := s.msgs.get(m); info != nil && info.run == id && len(info.tickets) == 0 {
					s.msgs.del(m)
				}
			}
			s.runs.del(id)
		}
		delete(s.origins, id)
	}
	s.mu.Unlock()
	return loop.Trim{Runs: d.Runs, Summary: d.Retained.Summary}, true
}
