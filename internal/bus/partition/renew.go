package partition

import (
	"context"
	"fmt"
	"time"
)

func (t *Table) renew() {
	defer t.wg.Done()
	every := t.cfg.TTL / 3
	timer := time.NewTimer(every)
	defer timer.Stop()
	// unanswered is when the first renewal of this lease that got no
	// answer was sent; zero while every renewal was answered.
	var unanswered time.Time
	for {
		select {
		case <-t.stop:
			return
		case <-timer.C:
		}
		t.mu.Lock()
		l, leaving := t.lease, t.leaving
		already := t.lease.ended != nil
		t.mu.Unlock()
		var lost error
		if !already {
			// Renewed under the same revision even when in doubt: success
			// proves the key never lapsed. A renewal waits for its answer
			// up to the TTL, not the renewal period: on a slow link the
			// answer comes late, and a renewal given up on may have been
			// stored all the same.
			ctx, cancel := context.WithTimeout(context.Background(), t.cfg.TTL)
			sent := time.Now()
			nl, err := t.renewOnce(ctx, l, leaving)
			if err != nil && final(err) && !unanswered.IsZero() {
				if own, ok := t.ownRenewal(ctx, l, unanswered); ok {
					nl, err = own, nil
				}
			}
			cancel()
			switch {
			case err == nil:
				unanswered = time.Time{}
				t.mu.Lock()
				doubted := time.Since(t.lease.renewed) > leaseFor(t.cfg.TTL)
				t.mu.Unlock()
				t.setLease(nl)
				if doubted {
					t.log.Info("partition: the lease holds again after renewals went unanswered")
				}
				timer.Reset(nextRenewal(nl.renewed, time.Now(), every))
				continue
			case final(err):
				lost = fmt.Errorf("%w: %v", ErrLost, err)
			default:
				// The server may be away for a moment: try again soon.
				// Past the lease, writes wait (Valid) until a renewal
				// gets through or the key is found gone.
				if unanswered.IsZero() {
					unanswered = sent
				}
				t.log.Warn("partition: renewing the lease", "err", err)
				timer.Reset(t.cfg.TTL / 10)
				continue
			}
		}
		unanswered = time.Time{}
		if leaving {
			return
		}
		if !already {
			t.lose(lost)
		}
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.TTL)
		nl, err := t.register(ctx, false)
		cancel()
		if err != nil {
			t.log.Warn("partition: joining again", "err", err)
			timer.Reset(t.cfg.TTL / 4)
			continue
		}
		t.mu.Lock()
		t.lease = nl
		t.mu.Unlock()
		t.log.Info("partition: joined again after the lease was lost")
		t.poke()
		timer.Reset(every)
	}
}

// ownRenewal reads the member key after a renewal found another revision
// while an earlier one went unanswered: when the key holds this member's
// own value at a later revision, that earlier renewal was stored (only this
// member writes its key, and only under the revision it last saw, which
// fails once the key expired), and the lease goes on from when the first
// unanswered renewal was sent, the earliest it can have been stored.
func (t *Table) ownRenewal(ctx context.Context, l lease, unanswered time.Time) (lease, bool) {
	rev, ok := t.stillOurs(ctx, l)
	if !ok {
		return l, false
	}
	t.log.Info("partition: a renewal that went unanswered was stored", "revision", rev)
	return lease{rev: rev, renewed: unanswered}, true
}

// lose ends the lease: every partition is dropped here (their keys stay;
// the others take them once the member key is gone, or this member takes
// them back when it joins again).
func (t *Table) lose(why error) {
	t.mu.Lock()
	t.lease.ended = why
	n := len(t.held)
	t.held = map[int]uint64{}
	t.mu.Unlock()
	t.log.Error("partition: this orchestrator lost its lease: its sessions stop at once", "err", why, "partitions", n)
	t.cfg.Lost(why)
}
