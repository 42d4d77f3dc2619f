package slots

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestGateAdmitsInArrivalOrder: calls beyond the limit wait, first come
// first served; one whose context ends leaves the line without taking a
// slot; a higher limit admits waiting calls at once.
func TestGateAdmitsInArrivalOrder(t *testing.T) {
	g := &Gate{limit: 1}
	if err := g.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	admitted := make(chan int, 4)
	wait := func(i int, ctx context.Context) chan error {
		errc := make(chan error, 1)
		go func() {
			err := g.Acquire(ctx)
			if err == nil {
				admitted <- i
			}
			errc <- err
		}()
		// Each joins the line before the next starts, so that the order
		// is known.
		for deadline := time.Now().Add(10 * time.Second); ; {
			if _, waiting, _ := g.State(); waiting == i {
				return errc
			}
			if time.Now().After(deadline) {
				t.Fatalf("call %d did not join the line", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait(1, context.Background())
	gone := wait(2, ctx)
	wait(3, context.Background())
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled wait: err = %v", err)
	}
	g.Release()
	if got := <-admitted; got != 1 {
		t.Fatalf("admitted %d first, want 1", got)
	}
	g.SetLimit(2)
	if got := <-admitted; got != 3 {
		t.Fatalf("admitted %d next, want 3", got)
	}
	if running, waiting, limit := g.State(); running != 2 || waiting != 0 || limit != 2 {
		t.Errorf("state = %d running, %d waiting, limit %d; want 2, 0, 2", running, waiting, limit)
	}
	g.SetLimit(0) // no limit
	if err := g.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
}
