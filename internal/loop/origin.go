package loop

import "github.com/agentfleet/agentfleet"

// originOf returns the parent of the run id that takes first: the Parent of
// its first user message that names one, looked up in the history for a
// resumed run; nil for a run of a client's message.
func (s *Session) originOf(first []*pending, id string) *agentfleet.Parent {
	for _, p := range first {
		if p.msg != nil && p.msg.Parent != nil {
			return p.msg.Parent
		}
		if p.resume == "" {
			continue
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, m := range s.history {
			if u, ok := m.(*agentfleet.UserMessage); ok && s.runOf[i] == id && u.Parent != nil {
				return u.Parent
			}
		}
		return nil
	}
	return nil
}

// priority returns the run's priority: that of its first input that names
// one, else the agent's (Config.Priority).
func (r *run) priority() string {
	if r.prio != "" {
		return r.prio
	}
	return r.s.cfg.Priority
}
