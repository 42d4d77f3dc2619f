package loop

import "github.com/agentfleet/agentfleet"

// Trim is a cut of the oldest runs of a session's history that its Store
// made when a run ended (the agent's history bounds): the messages of
// Runs leave the history, and Summary, its Covers counted from the first
// message kept, is the summary in force from then on (nil: none).
type Trim struct {
	Runs    map[string]bool
	Summary *agentfleet.ContextSummary
}

// Trimmer is a Store that may cut the history when a run ends. TrimAfter
// is called once the run's end is stored (EndRun), before the run.end
// event and before any other run starts; it reports whether it cut. The
// runs it drops are whole, ended and older than the run that ends, so
// the session drops the same messages from memory as the store did, and
// what a later load of the stored history gives is what the session holds.
type Trimmer interface {
	TrimAfter(final *agentfleet.AssistantMessage) (Trim, bool)
}

// trim drops the messages of t's runs from the history and takes t's
// summary.
func (s *Session) trim(t Trim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unpackLocked()
	// New slices: a reader may hold the old ones (historyLocked).
	history := make([]agentfleet.Message, 0, len(s.history))
	runOf := make([]string, 0, len(s.runOf))
	for i, m := range s.history {
		if t.Runs[s.runOf[i]] {
			s.spentTok -= spentBy(m)
			s.spentCost -= costBy(m)
			continue
		}
		history, runOf = append(history, m), append(runOf, s.runOf[i])
	}
	s.history, s.runOf = history, runOf
	for id := range t.Runs {
		delete(s.parents, id)
	}
	s.summary = t.Summary
}
