package partition

import (
	"errors"

	"github.com/agentfleet/agentfleet/internal/bus/ownership"
)

var _ ownership.Checker = (*Table)(nil)

// Fence returns the fence of partition p, which writers of its sessions
// carry: this member's id and the revision of the claim of p. It reports
// false when this member does not own p now: not held, handed over, the
// lease ended; a lease in doubt still owns, as in Owns (ownership.Grant).
func (t *Table) Fence(p int) (ownership.Fence, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return ownership.Grant(p, t.claimLocked(p))
}

// Check returns nil while fence f holds: this member's lease holds and it
// still holds f's partition under the claim f was handed out for (a
// partition being handed over holds until it is gone). It returns an
// error wrapping ErrInDoubt (and bus.ErrTemporary) while the lease is in
// doubt, and an *ownership.FencedError naming the current owner and epoch
// once the fence can never hold again.
func (t *Table) Check(f ownership.Fence) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return ownership.Check(f, t.claimLocked(f.Partition))
}

// claimLocked is what the table knows of partition p; t.mu held.
func (t *Table) claimLocked(p int) ownership.Claim {
	c := ownership.Claim{Self: t.id, Lease: t.validLocked()}
	c.InDoubt = c.Lease != nil && errors.Is(c.Lease, ErrInDoubt)
	c.Epoch, c.Held = t.held[p]
	c.Releasing = t.releasing[p]
	k := t.keys[p]
	c.Owner, c.KeyEpoch = k.owner, k.rev
	return c
}
