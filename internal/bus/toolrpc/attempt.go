package toolrpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
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
func (c *ToolClient) attempt(ctx context.Context, call *inflight, deadline time.Time, req *Call, attempt int, data []byte, hdr nats.Header, progress func(partial any)) (res *agentfleet.ToolResult, again, handedOff bool, err error) {
	c.register(call)
	defer func() {
		if !handedOff {
			c.unregister(call)
		}
	}()
	// The worker with the most free slots, if one is known (picks); else
	// the queue group. counted is the worker the call is counted on.
	subject, picked := c.toolSubject(req.Name), c.picks.Pick(req.Name)
	if picked != "" {
		subject = c.subjects.WorkerTool(req.Name, picked)
	}
	counted := picked
	send := func() error {
		if hdr == nil {
			return c.nc.PublishRequest(subject, call.reply, data)
		}
		trace.SpanFromContext(ctx).AddEvent(tracing.EventAttempt, trace.WithAttributes(tracing.ToolAttempt.Int(attempt)))
		return c.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: call.reply, Data: data, Header: hdr})
	}
	if err := send(); err != nil {
		c.settle(counted, goOn, delivery{})
		if errors.Is(err, nats.ErrMaxPayload) {
			return nil, false, false, fmt.Errorf("Tool %s: the call's arguments of %d bytes exceed the NATS max payload of %d bytes", req.Name, len(data), c.nc.MaxPayload())
		}
		return nil, false, false, fmt.Errorf("Tool %s: sending the call: %w", req.Name, err)
	}
	if req.Notify != nil {
		req.Notify.Sent() // tool.start, while the worker runs the call
	}

	st := newAttemptState(time.Now(), deadline, c.cfg.AckTimeout, c.cfg.HeartbeatMisses)
	call.arm(deadline, st.last.Add(st.window))
	for {
		var e attemptEvent
		select {
		case <-ctx.Done():
			call.timer.Stop()
			e = attemptEvent{kind: ctxEnded}
		case <-call.timer.C:
			e = attemptEvent{kind: timerFired, now: time.Now()}
		case d := <-call.frames:
			e = attemptEvent{kind: frameArrived, frame: d, now: time.Now()}
		}
		var fx attemptEffects
		st, fx = st.step(e)
		if f := e.frame.f; f != nil && f.T == wire.FrameAck && counted == "" && c.picks.Took(workerID(f.Worker)) {
			counted = workerID(f.Worker)
		}
		if fx.end == endNoResponders && picked != "" {
			// The chosen worker is gone: not delivered, so sent to the
			// queue group at once.
			c.observe(req.Name, fx.outcome, picked)
			c.picks.Gone(picked)
			counted, picked, subject = "", "", c.toolSubject(req.Name)
			if err := send(); err != nil {
				return nil, false, false, fmt.Errorf("Tool %s: sending the call: %w", req.Name, err)
			}
			st = newAttemptState(time.Now(), deadline, c.cfg.AckTimeout, c.cfg.HeartbeatMisses)
			call.arm(deadline, st.last.Add(st.window))
			continue
		}
		if fx.rearm {
			call.arm(deadline, st.last.Add(st.window))
		}
		if fx.progress {
			progress(e.frame.f.Partial)
		}
		if fx.handOff {
			// The record goes to cancelLate, which waits for the ack
			// elsewhere so that the cancel still reaches the worker, and
			// releases it.
			handedOff = true
			go c.cancelLate(call, req.ID)
		} else if fx.cancel {
			c.cancel(st.cancel, req.ID, call.reply)
		}
		if fx.outcome != "" {
			c.observe(req.Name, fx.outcome, fx.observed)
		}
		if fx.end == goOn {
			continue
		}
		c.settle(counted, fx.end, e.frame)
		res, again, err := c.attemptEnd(ctx, req, attempt, hdr != nil, st, e, fx)
		return res, again, handedOff, err
	}
}

// settle tells picks how a call counted on worker id ended: refused as
// busy (with the calls in flight its busy frame reports), lost (not chosen
// again until the fleet lists it again), or ended.
func (c *ToolClient) settle(id string, end attemptEnd, d delivery) {
	switch {
	case id == "":
	case end == endBusy:
		c.picks.Refused(id, d.f.InFlight)
	case end == endLost:
		c.picks.Gone(id)
	default:
		c.picks.Ended(id)
	}
}

// workerID is the instance id in a frame's worker, "name/id".
func workerID(worker string) string { return worker[strings.LastIndexByte(worker, '/')+1:] }

// attemptEnd is the outcome of an attempt that ended in state st with
// effects fx after event e: its result, a busy refusal (again), or its
// error.
func (c *ToolClient) attemptEnd(ctx context.Context, req *Call, attempt int, traced bool, st attemptState, e attemptEvent, fx attemptEffects) (res *agentfleet.ToolResult, again bool, err error) {
	name, f := req.Name, e.frame.f
	switch fx.end {
	case endCtx:
		return nil, false, c.ctxErr(ctx, req, fx.worker, "")
	case endTimeout:
		return nil, false, c.timeoutErr(req, fx.worker, "")
	case endLost:
		if fx.worker == "" {
			return nil, false, fmt.Errorf("Tool %s: %w: no worker took the call within %v", name, ErrWorkerLost, c.cfg.AckTimeout)
		}
		return nil, false, &lostError{worker: fx.worker, err: fmt.Errorf("Tool %s: %w: worker %s sent nothing for %v (%d heartbeat intervals)", name, ErrWorkerLost, fx.worker, st.window, c.cfg.HeartbeatMisses)}
	case endNoResponders:
		return nil, false, fmt.Errorf("Tool %s: %w (no worker is subscribed to %s)", name, ErrNoResponders, c.toolSubject(name))
	case endBadFrame:
		return nil, false, fmt.Errorf("Tool %s: worker %s sent a bad frame: %v", name, orUnknown(fx.worker), e.frame.err)
	case endBusy:
		if traced {
			trace.SpanFromContext(ctx).AddEvent(tracing.EventBusy, trace.WithAttributes(tracing.Worker.String(fx.worker)))
		}
		return nil, true, nil
	case endResult, endErrorResult:
		r := f.Result
		r.Worker = fx.worker
		r.Attempts = attempt
		if fx.end == endErrorResult {
			return nil, false, &ResultError{Result: r}
		}
		return r, false, nil
	}
	if f.Code == wire.CodeFenced {
		return nil, false, fencedErr(f.Error, fx.worker)
	}
	return nil, false, fmt.Errorf("%s (worker %s, code %s)", strings.TrimSpace(f.Error), orUnknown(fx.worker), f.Code)
}

// endErr explains why an attempt ended before its worker was done: its
// deadline (cause ErrTimeout), or ctx.
func (c *ToolClient) endErr(ctx context.Context, cause error, req *Call, worker, when string) error {
	if cause == ErrTimeout {
		return c.timeoutErr(req, worker, when)
	}
	return c.ctxErr(ctx, req, worker, when)
}

// ctxErr explains why ctx ended: the call's timeout, or an abort.
func (c *ToolClient) ctxErr(ctx context.Context, req *Call, worker, when string) error {
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return c.timeoutErr(req, worker, when)
	}
	c.observe(req.Name, "aborted", worker)
	return ctx.Err()
}

// timeoutErr is the error of a call whose timeout ended.
func (c *ToolClient) timeoutErr(req *Call, worker, when string) error {
	c.observe(req.Name, "timeout", worker)
	where := ""
	if worker != "" {
		where = " on worker " + worker
	}
	if when != "" {
		where += " " + when
	}
	return fmt.Errorf("Tool %s: %w after %v%s", req.Name, ErrTimeout, req.Timeout, where)
}
