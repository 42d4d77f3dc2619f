package proc

import (
	"context"
	"fmt"
	"time"
)

// pollInterval is how often WaitFor checks its condition.
const pollInterval = 50 * time.Millisecond

// WaitFor polls cond until it reports true, ctx ends or timeout passes. It is
// the harness's only way of waiting for something observable: it never
// sleeps blindly. The error names what was awaited and, when cond returned
// one, its last error.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("timed out after %v waiting for %s: %w", timeout, what, last)
			}
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// Pause waits d (a scheduled delay, never a wait for a condition) or until
// ctx ends.
func Pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
