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
			// proves the key never lapsed.
			ctx, cancel := context.WithTimeout(context.Background(), every)
			nl, err := t.renewOnce(ctx, l, leaving)
			cancel()
			switch {
			case err == nil:
				t.mu.Lock()
				doubted := time.Since(t.lease.renewed) > leaseFor(t.cfg.TTL)
				t.lease = nl
				t.mu.Unlock()
				if doubted {
					t.log.Info("partition: the lease holds again after renewals went unanswered")
				}
				timer.Reset(every)
				continue
			case final(err):
				lost = fmt.Errorf("%w: %v", ErrLost, err)
			default:
				// The server may be away for a moment: try again soon.
				// Past the lease, writes wait (Valid) until a renewal
				// gets through or the key is found gone.
				t.log.Warn("partition: renewing the lease", "err", err)
				timer.Reset(t.cfg.TTL / 10)
				continue
			}
		}
		if leaving {
			return
		}
		if !already {
			t.lose(lost)
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
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
