package erase

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLease: two deletes of one session do not overlap. The second waits
// while the first holds the lease and takes it once released; a first
// delete held up past its lease is taken over, and its check before a
// purge then says so, so it purges nothing more; another session's
// delete does not wait.
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

	// While a holds it, a second delete waits, here until its context ends.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = acquire(wctx, js, 1, "default", "s1", "o2", time.Minute)
	cancel()
	if err == nil {
		t.Fatal("a second delete took the lease while the first held it")
	}
	// Released, it is the second's.
	got := make(chan *lease)
	go func() {
		b, err := acquire(ctx, js, 1, "default", "s1", "o2", time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	a.release(ctx)
	b := <-got
	if b == nil {
		t.FailNow()
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
	c, err := acquire(ctx, js, 1, "default", "s1", "o2", time.Minute) // waits out slow's 200 ms
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
