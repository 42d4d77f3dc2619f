package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestBound(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		p    Policy
		n    int
		want time.Duration
	}{
		{"first", Policy{Base: 10 * ms, Max: 50 * ms}, 1, 10 * ms},
		{"doubles", Policy{Base: 10 * ms, Max: 50 * ms}, 2, 20 * ms},
		{"doubles twice", Policy{Base: 10 * ms, Max: 50 * ms}, 3, 40 * ms},
		{"capped", Policy{Base: 10 * ms, Max: 50 * ms}, 4, 50 * ms},
		{"capped far out", Policy{Base: 10 * ms, Max: 50 * ms}, 1000, 50 * ms},
		{"no cap", Policy{Base: ms}, 11, 1024 * ms},
		{"no cap far out", Policy{Base: ms}, 100000, time.Duration(1<<63 - 1)},
		{"constant", Policy{Base: time.Second, Multiplier: 1}, 9, time.Second},
		{"triples", Policy{Base: ms, Multiplier: 3}, 3, 9 * ms},
		{"no base", Policy{Max: time.Second}, 5, 0},
		{"base over max", Policy{Base: time.Second, Max: ms}, 1, ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Bound(tt.n); got != tt.want {
				t.Errorf("Bound(%d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

func TestDelay(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		jitter Jitter
		lo, hi time.Duration
	}{
		{"full", FullJitter, 0, 40 * ms},
		{"equal", EqualJitter, 20 * ms, 40 * ms},
		{"none", NoJitter, 40 * ms, 40 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Base: 10 * ms, Max: time.Second, Jitter: tt.jitter}
			for range 500 {
				if d := p.Delay(3); d < tt.lo || d > tt.hi {
					t.Fatalf("Delay(3) = %v, want within [%v, %v]", d, tt.lo, tt.hi)
				}
			}
		})
	}
	if d := (Policy{}).Delay(3); d != 0 {
		t.Errorf("zero Policy Delay = %v, want 0", d)
	}
}

func TestDo(t *testing.T) {
	errFlaky := errors.New("flaky")
	errBroken := errors.New("broken")
	tests := []struct {
		name      string
		max       int
		fails     int   // attempts that fail before one succeeds
		permanent int   // the attempt that fails for good (0: none)
		wantN     int   // attempts made
		wantErr   error // nil: success
	}{
		{"first try", 0, 0, 0, 1, nil},
		{"after failures", 0, 3, 0, 4, nil},
		{"out of attempts", 3, 10, 0, 3, errFlaky},
		{"last attempt succeeds", 3, 2, 0, 3, nil},
		{"permanent", 0, 10, 2, 2, errBroken},
		{"one attempt", 1, 10, 0, 1, errFlaky},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var retries []int
			p := Policy{MaxAttempts: tt.max, OnRetry: func(n int, err error, _ time.Duration) {
				retries = append(retries, n)
				if !errors.Is(err, errFlaky) {
					t.Errorf("OnRetry(%d) err = %v, want flaky", n, err)
				}
			}}
			made := 0
			err := Do(context.Background(), p, func(_ context.Context, n int) error {
				made++
				if n != made {
					t.Errorf("attempt number %d, want %d", n, made)
				}
				switch {
				case n == tt.permanent:
					return Permanent(errBroken)
				case n <= tt.fails:
					return errFlaky
				}
				return nil
			})
			if err != tt.wantErr {
				t.Errorf("Do = %v, want %v (unmarked)", err, tt.wantErr)
			}
			if made != tt.wantN {
				t.Errorf("attempts = %d, want %d", made, tt.wantN)
			}
			if len(retries) != tt.wantN-1 {
				t.Errorf("OnRetry called %d times, want %d", len(retries), tt.wantN-1)
			}
		})
	}
}

func TestDoAfterOverridesDelay(t *testing.T) {
	var waits []time.Duration
	p := Policy{Base: time.Hour, OnRetry: func(_ int, _ error, wait time.Duration) { waits = append(waits, wait) }}
	err := Do(context.Background(), p, func(_ context.Context, n int) error {
		if n == 1 {
			return After(errors.New("busy"), time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do = %v", err)
	}
	if len(waits) != 1 || waits[0] != time.Millisecond {
		t.Errorf("waits = %v, want [1ms]", waits)
	}
}

func TestDoStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The wait is an hour; the cancel during it must end Do.
	p := Policy{Base: time.Hour, Jitter: NoJitter, OnRetry: func(int, error, time.Duration) { cancel() }}
	made := 0
	err := Do(ctx, p, func(context.Context, int) error {
		made++
		return fmt.Errorf("store: %w", errors.New("no responders"))
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want one wrapping context.Canceled", err)
	}
	if got, want := err.Error(), "context canceled (last error: store: no responders)"; got != want {
		t.Errorf("Do = %q, want %q", got, want)
	}
	if made != 1 {
		t.Errorf("attempts = %d, want 1", made)
	}
}

func TestDoEndedContextBeforeWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := Do(ctx, Policy{OnRetry: func(int, error, time.Duration) { called = true }}, func(context.Context, int) error {
		return errors.New("down")
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want one wrapping context.Canceled", err)
	}
	if called {
		t.Error("OnRetry called after the context ended")
	}
}

func TestMarksOfNil(t *testing.T) {
	if Permanent(nil) != nil || After(nil, time.Second) != nil {
		t.Error("a mark of nil is not nil")
	}
}

func ExampleDo() {
	p := Policy{Base: time.Millisecond, Max: 10 * time.Millisecond, MaxAttempts: 5}
	err := Do(context.Background(), p, func(_ context.Context, n int) error {
		if n < 3 {
			return errors.New("not yet")
		}
		fmt.Println("succeeded on attempt", n)
		return nil
	})
	fmt.Println(err)
	// Output:
	// succeeded on attempt 3
	// <nil>
}
