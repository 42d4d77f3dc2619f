package loop

import "slices"

// compactLocked puts an idle session in its compact form: the history and
// the run of each message packed into one byte slice (packed.go), or, if it
// cannot be packed, without spare capacity (a run appends one message at a
// time, so up to half of each array is slack), and no channel, run
// context or goroutine of its own. The next input builds what a run needs
// again. Views of the history handed out before keep the arrays they were
// cut from. Call it with s.mu held, once the session is idle.
func (s *Session) compactLocked() {
	s.idle = closedIdle
	s.inbox, s.steering = nil, nil
	s.packLocked()
	// A history that could not be packed keeps no spare capacity.
	if cap(s.history) > len(s.history) {
		s.history = slices.Clip(slices.Clone(s.history))
	}
	if cap(s.runOf) > len(s.runOf) {
		s.runOf = slices.Clip(slices.Clone(s.runOf))
	}
}

// Compacted reports whether the session is idle in its compact form: no
// run, no input queued, and a history packed or without spare capacity
// (Packed tells which). It is for
// tests of what an idle session holds.
func (s *Session) Compacted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.running && s.abort == nil && s.idle == closedIdle && len(s.inbox) == 0 && len(s.steering) == 0 &&
		cap(s.history) == len(s.history) && cap(s.runOf) == len(s.runOf)
}

// Packed reports whether the session keeps its history packed (packed.go).
// It is for tests of what an idle session holds.
func (s *Session) Packed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.packed != nil
}
