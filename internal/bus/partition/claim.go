package partition

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// key is the key of partition p in the partitions bucket.
func key(p int) string { return strconv.Itoa(p) }

// reconcile brings the partitions held in line with the table, on every
// change of the members and every TTL/3.
func (t *Table) reconcile() {
	defer t.wg.Done()
	tick := time.NewTicker(t.cfg.TTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		case <-t.kick:
		}
		t.round()
	}
}

// round releases what the table gives to others and claims what it gives
// to this member.
func (t *Table) round() {
	t.mu.Lock()
	if t.validLocked() != nil || t.leaving {
		t.mu.Unlock()
		return
	}
	owners := Assign(t.liveLocked(true), t.cfg.Count)
	var release, claim []int
	stale := map[int]uint64{}
	for p, o := range owners {
		_, held := t.held[p]
		switch {
		case held && o != t.id && !t.releasing[p]:
			t.releasing[p] = true
			release = append(release, p)
		case !held && o == t.id:
			claim = append(claim, p)
		case !held && !t.releasing[p] && t.keys[p].owner == t.id:
			// A key of ours that we do not serve (kept through a lost
			// lease): the table gives it to another, who waits for it.
			stale[p] = t.keys[p].rev
		}
	}
	t.mu.Unlock()
	for p, rev := range stale {
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.TTL)
		if err := t.parts.Delete(ctx, key(p), jetstream.LastRevision(rev)); err != nil {
			t.log.Debug("partition: handing over a key not served", "partition", p, "err", err)
		}
		cancel()
	}
	for _, p := range release {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.release(p)
		}()
	}
	for _, p := range claim {
		select {
		case <-t.stop:
			return
		default:
		}
		t.claim(p)
	}
}

// claim takes partition p if it is free: no key, a key of this member's, or
// the key of a member whose lease is gone.
func (t *Table) claim(p int) {
	// A claim is a few round trips and then Acquire's own: bounded by
	// twice the TTL so that a slow link makes claims slower, not fail
	// (a claim given up on is tried again next round, stored or not).
	ctx, cancel := context.WithTimeout(context.Background(), 2*t.cfg.TTL)
	defer cancel()
	var rev uint64
	e, err := t.parts.Get(ctx, key(p))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		rev, err = t.parts.Create(ctx, key(p), []byte(t.id))
	case err != nil:
	case string(e.Value()) == t.id:
		rev, err = t.parts.Update(ctx, key(p), []byte(t.id), e.Revision())
	default:
		// The owner's key is read from the leader: a follower's stale
		// "not found" would hand over a partition whose owner lives
		// (leaderget.go).
		owner := string(e.Value())
		var gone bool
		if gone, err = t.memberGone(ctx, owner); err != nil {
			break
		}
		if !gone {
			return // its owner lives: it lets go once it sees the table
		}
		t.log.Info("partition: taking over from an orchestrator whose lease is gone", "partition", p, "from", owner)
		rev, err = t.parts.Update(ctx, key(p), []byte(t.id), e.Revision())
	}
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			t.log.Debug("partition: claim", "partition", p, "err", err)
		}
		return // another member was first, or the server is away: next round
	}
	t.mu.Lock()
	if t.validLocked() != nil || t.leaving {
		t.mu.Unlock()
		return // the key stays ours; whoever comes next takes it over
	}
	t.held[p] = rev
	t.mu.Unlock()
	if err := t.cfg.Acquire(ctx, p); err != nil {
		t.log.Warn("partition: serving a partition", "partition", p, "err", err)
		t.mu.Lock()
		t.releasing[p] = true
		t.mu.Unlock()
		t.release(p)
	}
}

// release stops serving p, then deletes its key (if it is still this
// member's), so that its next owner takes it at once.
func (t *Table) release(p int) {
	t.cfg.Release(p)
	t.mu.Lock()
	rev, held := t.held[p]
	delete(t.held, p)
	delete(t.releasing, p)
	valid := t.validLocked() == nil
	t.mu.Unlock()
	if !held || !valid {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.TTL)
	defer cancel()
	if err := t.parts.Delete(ctx, key(p), jetstream.LastRevision(rev)); err != nil {
		t.log.Warn("partition: handing a partition over", "partition", p, "err", err)
	}
	t.poke()
}
