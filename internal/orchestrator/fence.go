package orchestrator

import (
	"errors"

	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
)

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

// outdated reports whether s came into memory under another fence than the
// one t grants its partition now (ownership.Outdated): taken in while its
// partition was not, or no longer, this orchestrator's, its fence never
// holds, and it is to be taken in afresh. t is o.table (nil: never).
func (s *session) outdated(t *partition.Table) bool {
	if t == nil {
		return false
	}
	now, ok := t.Fence(s.part)
	return ownership.Outdated(s.fence, now, ok)
}

var errOutdated = errors.New("the session came into memory under a fence that never holds: taken in again under its partition's claim")

// isFenced reports whether err is (or wraps) an *ownership.FencedError. Its
// target lives here, so that a caller whose check passed allocates nothing.
func isFenced(err error) bool {
	var fenced *ownership.FencedError
	return errors.As(err, &fenced)
}
