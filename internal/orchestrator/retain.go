package orchestrator

import (
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// trimAfter cuts the session's history to its agent's bounds once run
// final's end is stored, as its owner, while no other run of the session
// goes on (retention.Keeper); the loop then drops the same runs from
// memory (loop.Trimmer), and the session forgets them.
func (s *session) trimAfter(final *agentfleet.AssistantMessage) (loop.Trim, bool) {
	s.mu.Lock()
	k, w := s.keeper, s.writer
	s.mu.Unlock()
	res, err := k.After(s.ctx, w, s.o.cfg.Now())
	if err != nil && !res.Stored {
		s.fenced(err)
	}
	if !res.Stored {
		return loop.Trim{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range res.Decision.Runs {
		if r := s.runs.Get(id); r != nil {
			for _, m := range r.ids {
				if info := s.msgs.Get(m); info != nil && info.run == id && len(info.tickets) == 0 {
					s.msgs.Delete(m)
				}
			}
		}
		s.runs.Delete(id)
		delete(s.origins, id)
	}
	return loop.Trim{Runs: res.Decision.Runs, Summary: res.Decision.Retained.Summary}, true
}
