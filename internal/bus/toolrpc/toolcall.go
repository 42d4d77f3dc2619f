package toolrpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/microsvc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/trace"
)

// AckDelay is how long a call may run before the worker acknowledges it. A
// call that ends sooner sends its result alone, which saves a message on the
// short calls that make up most of the traffic.
const AckDelay = 20 * time.Millisecond

// call is one call running on the worker. It runs in one goroutine (a
// runner, runner.go), which calls the tool and publishes the final frame,
// under one context (callCtx); one timer sends the ack after AckDelay, then
// the heartbeats, and cancels the call at the worker's bound.
type call struct {
	s     *ToolServer
	t     *agentfleet.Tool
	req   *wire.CallRequest
	reply string
	key   callKey
	start time.Time

	ctx    callCtx
	cancel context.CancelCauseFunc
	timer  *time.Timer

	// mu keeps the frames of the call in order, one at a time, and guards
	// what follows.
	mu    sync.Mutex
	acked bool
	done  bool            // the final frame is out or going: no frame after it
	beat  time.Time       // when the next ack or heartbeat is due
	frame wire.Frame      // scratch for the frames sent under mu, then the final one
	tc    agentfleet.Call // what the handler gets

	// span is the call's span when the worker traces (calltrace.go); began
	// is when the tool started, outcome how the call ended.
	span    trace.Span
	began   time.Time
	outcome string
	freed   bool // its slot is given back (free); of the call's goroutine
	// admitted gives back what ServerConfig.Admit granted; nil when it
	// granted nothing.
	admitted func()
	// outcomeRec is the call's record in the outcome bucket, nil when it
	// has none (outcome.go).
	outcomeRec *callOutcome
	// ep is the endpoint that took the call, whose stats count it when it
	// ends; nil for a call that came through no endpoint.
	ep *microsvc.Endpoint
}

// statsError is what the stats of an endpoint say of a call that ended
// with outcome: nothing for ok, else the tool and the outcome (never the
// tool's text, which may hold what the caller alone may read).
func statsError(tool, outcome string) string {
	switch outcome {
	case "ok":
		return ""
	case "":
		return "tool " + tool + ": the handler exited"
	}
	return "tool " + tool + ": " + outcome
}

// recordStats counts the call, once, in its endpoint's stats.
func (c *call) recordStats(outcome string) {
	if c.ep != nil {
		c.ep.Record(time.Since(c.start), statsError(c.t.Name, outcome))
		c.ep = nil
	}
}

// release gives back what Admit granted the call.
func (c *call) release() {
	if c.admitted != nil {
		c.admitted()
		c.admitted = nil
	}
}

// newCall prepares a call; s.start runs it.
func (s *ToolServer) newCall(t *agentfleet.Tool, creq *wire.CallRequest, reply string, h nats.Header, start time.Time) *call {
	c := &call{s: s, t: t, req: creq, reply: reply, key: callKey{creq.ID, reply}, start: start}
	var base context.Context
	base, c.span = s.traceCall(h, creq, start)
	// Always, so that a request without an allowed list reaches the tool
	// as a caller allowed nothing: call_tool fails closed.
	c.ctx.caller = Caller{Agent: creq.Agent, Session: creq.Session, RunID: creq.RunID, Allowed: creq.Allowed, Gated: creq.Gated}
	c.ctx.inner, c.cancel = context.WithCancelCause(base)
	if timeout := time.Duration(creq.TimeoutMS) * time.Millisecond; timeout > 0 {
		// The orchestrator owns the deadline; the worker's bound is a
		// backstop a little later, so it never outlives a call for long.
		c.ctx.deadline = start.Add(timeout + timeout/10 + time.Second)
	}
	return c
}

// run runs the call and sends its final frame.
func (c *call) run() {
	defer c.end()
	c.mu.Lock()
	c.beat = time.Now().Add(AckDelay)
	c.timer = time.AfterFunc(c.nextTick(c.beat), c.tick)
	c.mu.Unlock()

	if c.span != nil {
		c.began = time.Now()
	}
	c.beginOutcome()
	res, err := c.invoke()

	c.stop()
	// The tool is done: its slot is free before the final frame goes out,
	// so that the caller's next call, sent on that frame, finds it free.
	c.free()
	c.outcome = c.finish(res, err)
	c.s.observe(c.t.Name, c.outcome, time.Since(c.start))
}

// stop ends the ack and the heartbeats: none after the final frame.
func (c *call) stop() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	c.timer.Stop()
}

// end releases what the call holds, also when the handler left its
// goroutine by runtime.Goexit.
func (c *call) end() {
	s := c.s
	defer s.wg.Done()
	c.stop()
	c.cancel(nil)
	c.endSpan()
	s.mu.Lock()
	if s.calls[c.key] == c {
		delete(s.calls, c.key)
	}
	s.mu.Unlock()
	c.free()
	c.release()
	c.recordStats(c.outcome)
}

// free gives the call's slot back, once.
func (c *call) free() {
	if !c.freed {
		c.freed = true
		c.s.inFlight.Add(-1)
		<-c.s.slots
	}
}

// nextTick returns how long from now the timer waits: until the next beat
// or the bound, whichever comes first. Under mu.
func (c *call) nextTick(beat time.Time) time.Duration {
	next := beat
	if d := c.ctx.deadline; !d.IsZero() && !c.ctx.expired.Load() && d.Before(next) {
		next = d
	}
	return time.Until(next)
}

// tick is the call's timer: it cancels the call at the bound, and sends
// the ack, then a heartbeat every interval, until the call is done.
func (c *call) tick() {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return
	}
	now := time.Now()
	expire := false
	if d := c.ctx.deadline; !d.IsZero() && !c.ctx.expired.Load() && !now.Before(d) {
		c.ctx.expired.Store(true)
		expire = true
	}
	if !now.Before(c.beat) {
		f := &c.frame
		if !c.acked {
			c.acked = true
			c.ackFrame(f)
		} else {
			*f = wire.Frame{T: wire.FrameHeartbeat, ID: c.req.ID}
		}
		if err := c.publish(f); errors.Is(err, nats.ErrConnectionClosed) {
			// The connection is closed for good: no frame of this call
			// can reach the orchestrator, which has given it up as lost.
			// The call stops rather than beat into the void.
			c.done = true
			c.mu.Unlock()
			c.cancel(ErrConnectionClosed)
			return
		}
		c.beat = now.Add(c.s.cfg.Heartbeat)
	}
	c.timer.Reset(c.nextTick(c.beat))
	c.mu.Unlock()
	if expire {
		c.cancel(context.DeadlineExceeded)
	}
}

// ErrConnectionClosed is the cause a call is cancelled with when the
// worker's connection closed for good while it ran.
var ErrConnectionClosed = errors.New("the worker's connection to NATS is closed")

// ackFrame sets f to the call's ack. Under mu.
func (c *call) ackFrame(f *wire.Frame) {
	s := c.s
	*f = wire.Frame{T: wire.FrameAck, ID: c.req.ID, Worker: s.name, Cancel: s.cancelSubject, HeartbeatMS: s.cfg.Heartbeat.Milliseconds()}
}

// progress sends a progress frame; after the final frame, none. The ack
// always comes first: a call that reports progress before AckDelay sends
// its ack then, and its first heartbeat an interval later.
func (c *call) progress(partial any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		if !c.acked {
			c.acked = true
			c.ackFrame(&c.frame)
			c.publish(&c.frame)
			c.beat = time.Now().Add(c.s.cfg.Heartbeat)
		}
		c.frame = wire.Frame{T: wire.FrameProgress, ID: c.req.ID, Partial: partial}
		c.publish(&c.frame)
	}
}

// publish sends a frame that is not final, and returns the error. Under mu.
func (c *call) publish(f *wire.Frame) error {
	err := publishFrame(c.s.nc, c.reply, f)
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		c.logWarn("publish frame", "type", f.T, "err", err)
	}
	return err
}

func (c *call) logWarn(msg string, args ...any) {
	c.s.log.With("tool", c.t.Name, "tool_call_id", c.req.ID, "run_id", c.req.RunID, "session", c.req.Session).Warn(msg, args...)
}

// invoke runs the handler, turning a panic into an error.
func (c *call) invoke() (res *agentfleet.ToolResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, fmt.Errorf("Tool %s panicked: %v", c.t.Name, v)
		}
	}()
	c.tc = agentfleet.Call{ID: c.req.ID, Name: c.req.Tool, Arguments: c.req.Args, Progress: c.progress}
	return c.t.Handler.Call(&c.ctx, &c.tc)
}

// finish sends the final frame of the call, from the goroutine that ran
// the handler, and returns the outcome. What is rare (a failed call, a
// result that does not fit) is in functions of their own, which keeps this
// frame small: a call's goroutine then runs an ordinary result within its
// first stack, without growing it.
func (c *call) finish(res *agentfleet.ToolResult, err error) (outcome string) {
	s := c.s
	// The timer and progress send nothing once the call is done: the
	// scratch frame is this goroutine's.
	f := &c.frame
	*f = wire.Frame{}
	f.T, f.ID, f.Worker, f.Result = wire.FrameResult, c.req.ID, s.name, res
	outcome = "ok"
	if err != nil {
		outcome = c.failed(f, err)
	} else if res == nil {
		f.Result = emptyResult()
	}
	buf, err := wire.EncodeFrameBuf(f)
	defer wire.PutFrameBuf(buf)
	if err != nil {
		c.endOutcome(nil, 0)
		return c.unencodable(err)
	}
	if max := s.nc.MaxPayload(); int64(buf.Len()) > max-1024 {
		c.endOutcome(nil, buf.Len())
		return c.tooLarge(buf.Len(), max)
	}
	c.endOutcome(buf.Bytes(), buf.Len())
	// Counted before the result goes out, so that whoever reads the stats
	// after the result finds the call in them.
	c.recordStats(outcome)
	if f.IsError {
		err = c.publishFailed(buf.Bytes())
	} else {
		err = s.nc.Publish(c.reply, buf.Bytes())
	}
	if err != nil {
		c.logWarn("send result", "err", err)
	}
	return outcome
}

// failed makes f the result of a call that failed with err, and returns
// the outcome: "canceled" when the call's context ended it, else "error".
//
//go:noinline
func (c *call) failed(f *wire.Frame, err error) (outcome string) {
	outcome = "error"
	msg := err.Error()
	if cause := context.Cause(&c.ctx); cause != nil && c.ctx.Err() != nil {
		outcome = "canceled"
		msg = fmt.Sprintf("Tool %s stopped: %v", c.t.Name, cause)
	}
	f.Result, f.IsError = agentfleet.ErrorResult(msg), true
	return outcome
}

// emptyResult is the result of a tool that returned none, and no error.
//
//go:noinline
func emptyResult() *agentfleet.ToolResult {
	return &agentfleet.ToolResult{Content: []agentfleet.Content{}}
}

// unencodable sends the error frame of a result that does not encode.
//
//go:noinline
func (c *call) unencodable(err error) (outcome string) {
	c.s.sendError(c.reply, c.req.ID, wire.CodeInternal, fmt.Sprintf("Tool %s: result does not encode: %v", c.t.Name, err))
	return "error"
}

// tooLarge sends the error frame of a result of n bytes, more than the
// connection's max payload allows.
//
//go:noinline
func (c *call) tooLarge(n int, max int64) (outcome string) {
	c.s.sendError(c.reply, c.req.ID, wire.CodeTooLarge, fmt.Sprintf("Tool %s: result of %d bytes exceeds the NATS max payload of %d bytes", c.t.Name, n, max))
	return "too_large"
}

// publishFailed publishes the encoded result of a failed call, with the
// micro error headers.
//
//go:noinline
func (c *call) publishFailed(data []byte) error {
	m := nats.NewMsg(c.reply)
	m.Data = data
	m.Header.Set(micro.ErrorHeader, "tool error")
	m.Header.Set(micro.ErrorCodeHeader, wire.CodeInternal)
	return c.s.nc.PublishMsg(m)
}

// publishFrame encodes f and publishes it on subject.
func publishFrame(nc *nats.Conn, subject string, f *wire.Frame) error {
	buf, err := wire.EncodeFrameBuf(f)
	if err == nil {
		err = nc.Publish(subject, buf.Bytes())
	}
	wire.PutFrameBuf(buf)
	return err
}
