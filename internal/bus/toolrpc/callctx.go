package toolrpc

import (
	"context"
	"sync/atomic"
	"time"
)

// callCtx is the context of one call on the worker: one cancel context,
// canceled with the cause (the orchestrator's cancel, a drain, the worker's
// bound), that also carries the Caller and reports the bound as its
// deadline. The bound is enforced by the call's timer (see call.tick), not
// by a second context with a timer of its own.
//
// Once the bound fired, Err is context.DeadlineExceeded and context.Cause
// too, as with context.WithTimeout; contexts derived from it see
// context.Canceled with that cause.
type callCtx struct {
	inner    context.Context // from context.WithCancelCause
	caller   Caller
	deadline time.Time // zero: no bound
	expired  atomic.Bool
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, !c.deadline.IsZero() }

func (c *callCtx) Done() <-chan struct{} { return c.inner.Done() }

func (c *callCtx) Err() error {
	err := c.inner.Err()
	if err != nil && c.expired.Load() && context.Cause(c.inner) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}

func (c *callCtx) Value(key any) any {
	if _, ok := key.(callerKey); ok {
		return c.caller
	}
	return c.inner.Value(key)
}

func (c *callCtx) String() string { return "bus.callCtx" }
