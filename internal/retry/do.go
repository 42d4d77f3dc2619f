package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Do calls op, with the attempt number from 1, until it returns nil, and
// waits p.Delay(n) after failed attempt n before the next. It returns nil
// on success; the error op returned, without its marker, when that error
// is Permanent or when p.MaxAttempts attempts have failed; and, when ctx
// ends first (checked after every failure and during every wait), an error
// wrapping ctx.Err() that names the last error of op.
func Do(ctx context.Context, p Policy, op func(ctx context.Context, n int) error) error {
	for n := 1; ; n++ {
		err := op(ctx, n)
		if err == nil {
			return nil
		}
		wait, asked := time.Duration(0), false
		var s *signal
		if errors.As(err, &s) {
			if top, ok := err.(*signal); ok {
				err = top.err
			}
			if s.permanent {
				return err
			}
			wait, asked = s.wait, true
		}
		if p.MaxAttempts > 0 && n >= p.MaxAttempts {
			return err
		}
		if ctx.Err() != nil {
			return stopped(ctx, err)
		}
		if !asked {
			wait = p.Delay(n)
		}
		if p.OnRetry != nil {
			p.OnRetry(n, err, wait)
		}
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return stopped(ctx, err)
		case <-t.C:
		}
	}
}

// stopped is the error of Do whose ctx ended after the failure last.
func stopped(ctx context.Context, last error) error {
	if cause := context.Cause(ctx); cause != ctx.Err() {
		// Cancelled with a cause: matched by both, so that callers that
		// ask for the cause find it, and those that ask for
		// context.Canceled still do.
		return fmt.Errorf("%w: %w (last error: %v)", ctx.Err(), cause, last)
	}
	return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
}

// Permanent marks err as not worth another attempt: Do returns it at once,
// without the mark. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &signal{err: err, permanent: true}
}

// After marks err as worth another attempt after exactly wait (as a
// server's Retry-After asks), in place of the policy's delay. After(nil,
// wait) is nil.
func After(err error, wait time.Duration) error {
	if err == nil {
		return nil
	}
	return &signal{err: err, wait: wait}
}

// signal is an error of op that tells Do what to do next.
type signal struct {
	err       error
	permanent bool
	wait      time.Duration
}

func (s *signal) Error() string { return s.err.Error() }
func (s *signal) Unwrap() error { return s.err }
