package toolrpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

// notSentError is an error of a call that no worker took (it waited for a
// free worker until its timeout or abort), so that Execute neither retries
// it nor calls its outcome unknown.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// attempt sends one request and follows it to its end, with call's timer
// armed for the earlier of deadline and the watchdog. again reports a busy
// refusal; handedOff that call went to cancelLate, which releases it.
func (c *ToolClient) attempt(ctx context.Context, call *inflight, deadline time.Time, prep *pipeline.Prepared, attempt int, data []byte, hdr nats.Header, progress pipeline.ProgressFunc) (res *agentfleet.ToolResult, again, handedOff bool, err error) {
	c.register(call)
	defer func() {
		if !handedOff {
			c.unregister(call)
		}
	}()
	var sendErr error
	if hdr == nil {
		sendErr = c.nc.PublishRequest(c.toolSubject(prep.Call.Name), call.reply, data)
	} else {
		sendErr = c.nc.PublishMsg(&nats.Msg{Subject: c.toolSubject(prep.Call.Name), Reply: call.reply, Data: data, Header: hdr})
		trace.SpanFromContext(ctx).AddEvent(tracing.EventAttempt, trace.WithAttributes(tracing.ToolAttempt.Int(attempt)))
	}
	if err := sendErr; err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			return nil, false, false, fmt.Errorf("Tool %s: the call's arguments of %d bytes exceed the NATS max payload of %d bytes", prep.Call.Name, len(data), c.nc.MaxPayload())
		}
		return nil, false, false, fmt.Errorf("Tool %s: sending the call: %w", prep.Call.Name, err)
	}
	prep.Sent() // tool.start, while the worker runs the call

	var (
		worker, cancelSubject string
		window                = c.cfg.AckTimeout
		last                  = time.Now() // the last frame, or the send
	)
	// The watchdog is not moved on every frame: when the timer fires, it
	// is armed again for the window after the last frame, if one came.
	call.arm(deadline, last.Add(window))
	// ended ends the attempt for ctx or the deadline (cause), cancelling
	// the call on its worker.
	ended := func(cause error) error {
		if cancelSubject == "" {
			// The worker may have taken the call without its ack having
			// reached us yet: wait for that ack elsewhere, so that the
			// cancel still reaches the worker.
			handedOff = true
			go c.cancelLate(call, prep.Call.ID)
		} else {
			c.cancel(cancelSubject, prep.Call.ID, call.reply)
		}
		return c.endErr(ctx, cause, prep, worker, "")
	}
	for {
		select {
		case <-ctx.Done():
			call.timer.Stop()
			err := ended(ctx.Err()) // before handedOff is read
			return nil, false, handedOff, err
		case <-call.timer.C:
			now := time.Now()
			if !deadline.IsZero() && !now.Before(deadline) {
				err := ended(pipeline.ErrTimeout) // before handedOff is read
				return nil, false, handedOff, err
			}
			if now.Sub(last) < window {
				call.arm(deadline, last.Add(window))
				continue
			}
			c.cancel(cancelSubject, prep.Call.ID, call.reply)
			c.observe(prep.Call.Name, "worker_lost", worker)
			if worker == "" {
				return nil, false, false, fmt.Errorf("Tool %s: %w: no worker took the call within %v", prep.Call.Name, pipeline.ErrWorkerLost, c.cfg.AckTimeout)
			}
			return nil, false, false, &lostError{worker: worker, err: fmt.Errorf("Tool %s: %w: worker %s sent nothing for %v (%d heartbeat intervals)", prep.Call.Name, pipeline.ErrWorkerLost, worker, window, c.cfg.HeartbeatMisses)}
		case d := <-call.frames:
			switch {
			case d.noResponder:
				c.observe(prep.Call.Name, "no_responders", "")
				return nil, false, false, fmt.Errorf("Tool %s: %w (no worker is subscribed to %s)", prep.Call.Name, pipeline.ErrNoResponders, c.toolSubject(prep.Call.Name))
			case d.err != nil:
				c.cancel(cancelSubject, prep.Call.ID, call.reply)
				c.observe(prep.Call.Name, "error", worker)
				if worker == "" {
					worker = d.worker
				}
				return nil, false, false, fmt.Errorf("Tool %s: worker %s sent a bad frame: %v", prep.Call.Name, orUnknown(worker), d.err)
			}
			f := d.f
			last = time.Now()
			switch f.T {
			case wire.FrameAck:
				worker, cancelSubject = f.Worker, f.Cancel
				// Clamped: a worker's hb_ms must not overflow the window
				// nor switch loss detection off.
				if w, ok := wire.HeartbeatWindow(f.HeartbeatMS, c.cfg.HeartbeatMisses); ok {
					window = w
				}
				call.arm(deadline, last.Add(window))
			case wire.FrameBusy:
				c.observe(prep.Call.Name, "busy", f.Worker)
				if hdr != nil {
					trace.SpanFromContext(ctx).AddEvent(tracing.EventBusy, trace.WithAttributes(tracing.Worker.String(f.Worker)))
				}
				return nil, true, false, nil
			case wire.FrameProgress:
				progress(f.Partial)
			case wire.FrameHeartbeat:
			case wire.FrameResult:
				r := f.Result
				r.Worker = orDefault(f.Worker, worker)
				r.Attempts = attempt
				if f.IsError {
					c.observe(prep.Call.Name, "error", r.Worker)
					return nil, false, false, &pipeline.ResultError{Result: r}
				}
				c.observe(prep.Call.Name, "ok", r.Worker)
				return r, false, false, nil
			case wire.FrameError:
				c.observe(prep.Call.Name, "error", orDefault(f.Worker, worker))
				return nil, false, false, fmt.Errorf("%s (worker %s, code %s)", strings.TrimSpace(f.Error), orUnknown(orDefault(f.Worker, worker)), f.Code)
			}
		}
	}
}

// endErr explains why an attempt ended before its worker was done: its
// deadline (cause pipeline.ErrTimeout), or ctx.
func (c *ToolClient) endErr(ctx context.Context, cause error, prep *pipeline.Prepared, worker, when string) error {
	if cause == pipeline.ErrTimeout {
		return c.timeoutErr(prep, worker, when)
	}
	return c.ctxErr(ctx, prep, worker, when)
}

// ctxErr explains why ctx ended: the call's timeout, or an abort.
func (c *ToolClient) ctxErr(ctx context.Context, prep *pipeline.Prepared, worker, when string) error {
	if errors.Is(context.Cause(ctx), pipeline.ErrTimeout) {
		return c.timeoutErr(prep, worker, when)
	}
	c.observe(prep.Call.Name, "aborted", worker)
	return ctx.Err()
}

// timeoutErr is the error of a call whose timeout ended.
func (c *ToolClient) timeoutErr(prep *pipeline.Prepared, worker, when string) error {
	c.observe(prep.Call.Name, "timeout", worker)
	where := ""
	if worker != "" {
		where = " on worker " + worker
	}
	if when != "" {
		where += " " + when
	}
	return fmt.Errorf("Tool %s: %w after %v%s", prep.Call.Name, pipeline.ErrTimeout, prep.Timeout, where)
}
