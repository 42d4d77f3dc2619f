package orchestrator

// holds returns nil while this orchestrator may still write the session
// and acknowledge its input: the ownership fence the session came into
// memory with still holds, and the orchestrator is not past its shutdown
// grace. It returns an error that can pass while the lease is in doubt, and
// an *ownership.FencedError once the partition is another's or claimed
// again. It decides only for the input policy; the history writer and the
// input acker check the same fence themselves.
func (s *session) holds() error {
	s.o.mu.Lock()
	stopping := s.o.stopping
	s.o.mu.Unlock()
	if stopping {
		return errShutdown
	}
	return s.owner.Check(s.fence)
}
