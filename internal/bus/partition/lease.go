package partition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// member is the value of a member's key in the members bucket.
type member struct {
	ID string `json:"id"`
	// Leaving: the member is handing its partitions over; the others leave
	// it out of the table but wait for it to release them.
	Leaving bool      `json:"leaving,omitempty"`
	Started time.Time `json:"started"`
}

// lease is this member's key in the members bucket, which expires TTL after
// its last write. Every partition this member owns is owned under it: the
// others take a partition of a member only once its key is gone.
type lease struct {
	rev     uint64
	renewed time.Time // when the last acknowledged write was sent
	ended   error     // why the lease is over; nil while it holds
}

// leaseFor is how long after a renewal was sent the lease certainly holds:
// a member's key expires TTL after the server stored the write, and the
// others wait for that; the margin covers clock rate differences.
func leaseFor(ttl time.Duration) time.Duration { return ttl - ttl/5 }

// ErrLost is the error of a lease that ended: this member may own nothing.
var ErrLost = errors.New("partition: this orchestrator's lease is lost")

// ErrInDoubt is the error (wrapped as bus.Temporary) of a lease whose
// renewals went unanswered for longer than it lasts: nothing may be written
// until a renewal gets through (the lease holds again) or finds the key
// gone (ErrLost).
var ErrInDoubt = errors.New("partition: this orchestrator's lease is in doubt")

// register writes this member's key, and returns the lease it starts.
func (t *Table) register(ctx context.Context, leaving bool) (lease, error) {
	b, _ := json.Marshal(member{ID: t.id, Leaving: leaving, Started: t.started})
	sent := time.Now()
	rev, err := t.members.Create(ctx, t.id, b)
	if errors.Is(err, jetstream.ErrKeyExists) {
		// Our own key, from a lease that was lost while the key lived on.
		var e jetstream.KeyValueEntry
		if e, err = t.members.Get(ctx, t.id); err == nil {
			sent = time.Now()
			rev, err = t.members.Update(ctx, t.id, b, e.Revision())
		}
	}
	if err != nil {
		return lease{}, fmt.Errorf("partition: join: %w", err)
	}
	return lease{rev: rev, renewed: sent}, nil
}

// renewOnce writes the member key again under its revision. A revision
// that no longer matches, or a key that is gone, ends the lease: the others
// may have taken its partitions.
func (t *Table) renewOnce(ctx context.Context, l lease, leaving bool) (lease, error) {
	b, _ := json.Marshal(member{ID: t.id, Leaving: leaving, Started: t.started})
	sent := time.Now()
	rev, err := t.members.Update(ctx, t.id, b, l.rev)
	if err != nil {
		return l, err
	}
	return lease{rev: rev, renewed: sent}, nil
}

// final reports whether a renewal error ends the lease for certain.
func final(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) ||
		errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
}

// nextRenewal is how long after a renewal's answer (at now) the next one is
// sent: the period after the last was sent, at once when the answer took
// longer, so that on a slow link renewals follow each other rather than
// wait a period after each answer.
func nextRenewal(sent, now time.Time, every time.Duration) time.Duration {
	return max(every-now.Sub(sent), 0)
}

// storedRenewal reports whether a member key found holding found at
// revision foundRev, after this member (id, started) last renewed it at
// lastRev, holds one of this member's own renewals sent since.
func storedRenewal(id string, started time.Time, found member, foundRev, lastRev uint64) bool {
	return found.ID == id && found.Started.Equal(started) && foundRev > lastRev
}
