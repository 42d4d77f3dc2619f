package erase

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLease: two deletes of one session do not overlap. The second is
// refused at once while the first holds the lease, and takes it once
// released; a first delete held up past its lease is taken over, and its
// check before a purge then says so, so it purges nothing more; another
// session's delete is not refused.
func TestLease(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	js, _ := jetstream.New(bustest.MustConnect(t, srv))
	ctx := context.Background()

	a, err := acquire(ctx, js, 1, "default", "s1", "o1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.check(ctx); err != nil {
		t.Fatalf("the holder's check: %v", err)
	}
	other, err := acquire(ctx, js, 1, "default", "s2", "o2", time.Minute)
	if err != nil {
		t.Fatalf("another session's delete: %v", err)
	}
	other.release(ctx)

	// While a holds it, a second delete is refused at once: not queued to
	// run after its client gave up.
	if _, err := acquire(ctx, js, 1, "default", "s1", "o2", time.Minute); !errors.Is(err, ErrInProgress) {
		t.Fatalf("a second delete while the first holds the lease: %v, want ErrInProgress", err)
	}
	// Released, it is the second's.
	a.release(ctx)
	b, err := acquire(ctx, js, 1, "default", "s1", "o2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.check(ctx); err != nil {
		t.Fatalf("the second's check: %v", err)
	}
	b.release(ctx)

	// A delete held up past its lease is taken over and purges nothing
	// more.
	slow, err := acquire(ctx, js, 1, "default", "s1", "o1", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(ctx, js, 1, "default", "s1", "o2", time.Minute); !errors.Is(err, ErrInProgress) {
		t.Fatalf("while slow's time runs: %v, want ErrInProgress", err)
	}
	// slow's time is a deadline on the clock: nothing to wait on but it.
	time.Sleep(time.Until(slow.until) + 10*time.Millisecond)
	c, err := acquire(ctx, js, 1, "default", "s1", "o2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := slow.check(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("the held-up delete's check = %v, want ErrLeaseLost", err)
	}
	slow.release(ctx) // must not release c's
	if err := c.check(ctx); err != nil {
		t.Errorf("the later delete lost its lease to the held-up one's release: %v", err)
	}
}
