package toolrpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/slots"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/retry"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

// HeaderRunID names the run of a history record (internal/history). Call
// requests carry no agentfleet headers: their body holds the call id, the
// attempt and the run (see docs/PROTOCOL.md, "A call"). A traced call
// carries the W3C trace context (traceparent, tracestate).
const HeaderRunID = "Agentfleet-Run-Id"

// ClientConfig configures a ToolClient; the zero value means the documented
// defaults.
type ClientConfig struct {
	// Prefix is the subject prefix; default DefaultPrefix.
	Prefix string
	// AckTimeout bounds the wait for a worker to take a call; default 5s.
	AckTimeout time.Duration
	// NoResponderWait bounds how long a call that finds no worker
	// subscribed (NATS no responders: the request reached nobody) waits
	// for one and is sent again, whatever its tool; default AckTimeout.
	// Workers reconnect a moment after the orchestrator when a NATS server
	// restarts, and a worker may be on its way.
	NoResponderWait time.Duration
	// HeartbeatMisses is how many heartbeat intervals may pass without a
	// frame before the worker is declared lost; default 3.
	HeartbeatMisses int
	// BusyBackoff is the first bound of the wait before a call refused by a
	// busy worker is sent again; default 5ms. The bound doubles with each
	// refusal of the call up to MaxBusyBackoff, and the wait is drawn at
	// random below it (full jitter), so that refused calls spread out
	// instead of coming back together.
	BusyBackoff time.Duration
	// MaxBusyBackoff caps the bound of that wait; default 250ms. A call
	// that workers keep refusing is therefore sent about
	// log2(MaxBusyBackoff/BusyBackoff) + 2·timeout/MaxBusyBackoff times,
	// not hundreds.
	MaxBusyBackoff time.Duration
	// MaxAttempts bounds the attempts of a call to an idempotent or
	// read-only tool whose attempt timed out or whose worker was lost;
	// default 3. Other tools are never retried.
	MaxAttempts int
	// RetryBackoff is the wait before the second attempt, doubled for each
	// further one, with jitter; default 100ms.
	RetryBackoff time.Duration
	// Observe, if set, is called for every attempt that ends, with the tool,
	// its outcome and the worker. For metrics.
	Observe func(tool, outcome, worker string)
}

// ToolClient executes tool calls on the fleet: one request on the tool's
// subject, then frames on a reply inbox until the final one. It is safe
// for concurrent use.
type ToolClient struct {
	closeOnce sync.Once
	closeErr  error
	nc        *nats.Conn
	cfg       ClientConfig
	subjects  bus.Subjects
	inbox     string // prefix of the per-call inboxes, ends with "."
	sub       *nats.Subscription
	seq       atomic.Uint64

	// mu guards calls, by the sequence number of their inbox; frames are
	// put in a record only under it (see inflight).
	mu    sync.Mutex
	calls map[uint64]*inflight

	// toolSubjects caches the request subject of each tool.
	toolSubjectsMu sync.RWMutex
	toolSubjects   map[string]string

	// gates bound the calls in flight per tool to the fleet's capacity;
	// a tool has one only while it has a capacity, or calls in its gate.
	gatesMu  sync.Mutex
	gates    map[string]*slots.Gate
	capacity map[string]int

	// picks chooses the worker of each call among those that take calls
	// on their own subjects (SetWorkers).
	picks slots.Table
}

type delivery struct {
	f           *wire.Frame
	err         error
	worker      string // of a frame that did not decode, if it says
	noResponder bool
}

// NewToolClient subscribes the client's reply inboxes on nc.
func NewToolClient(nc *nats.Conn, cfg ClientConfig) (*ToolClient, error) {
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = 5 * time.Second
	}
	if cfg.NoResponderWait <= 0 {
		cfg.NoResponderWait = cfg.AckTimeout
	}
	if cfg.HeartbeatMisses <= 0 {
		cfg.HeartbeatMisses = 3
	}
	if cfg.BusyBackoff <= 0 {
		cfg.BusyBackoff = 5 * time.Millisecond
	}
	if cfg.MaxBusyBackoff <= 0 {
		cfg.MaxBusyBackoff = 250 * time.Millisecond
	}
	cfg.MaxBusyBackoff = max(cfg.MaxBusyBackoff, cfg.BusyBackoff)
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 100 * time.Millisecond
	}
	subjects, err := bus.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	c := &ToolClient{nc: nc, cfg: cfg, subjects: subjects, inbox: nc.NewRespInbox() + ".", calls: make(map[uint64]*inflight), toolSubjects: map[string]string{}, gates: map[string]*slots.Gate{}}
	c.sub, err = nc.Subscribe(c.inbox+"*", c.route)
	if err != nil {
		return nil, fmt.Errorf("tool client: subscribe: %w", err)
	}
	// Frames of busy fleets arrive fast; do not let the default pending
	// limits drop them.
	if err := c.sub.SetPendingLimits(-1, -1); err != nil {
		return nil, fmt.Errorf("tool client: %w", err)
	}
	return c, nil
}

// SetCapacity sets how many calls of each tool the client keeps in flight at
// most: the sum of the concurrency advertised by the workers that serve it
// (FleetTool.Concurrency). Calls beyond it wait in the client, first come
// first served, until a call of that tool ends, or their timeout ends, or
// they are aborted; a full fleet then holds its calls here instead of
// refusing them as busy again and again. A tool absent from caps, or of
// capacity 0 (unknown: a worker advertises none), is not limited. It may be
// called at any time, typically on every change of the fleet
// (FleetConfig.OnCapacity); waiting calls are admitted at once when a
// capacity grows, and calls in flight keep their slots when it shrinks.
func (c *ToolClient) SetCapacity(caps map[string]int) {
	c.gatesMu.Lock()
	defer c.gatesMu.Unlock()
	c.capacity = maps.Clone(caps)
	for name, g := range c.gates {
		g.SetLimit(caps[name])
		if running, waiting, limit := g.State(); running == 0 && waiting == 0 && limit == 0 {
			delete(c.gates, name)
		}
	}
}

// SetWorkers sets the workers of each tool that take calls on a subject
// of their own, <prefix>.tool.<name>.<id> (fleet.MetaDirect), with the
// concurrency each declares (FleetConfig.OnWorkers). A call then goes to the
// one with the most free slots as this client knows them (package slots),
// and to the tool's queue group when none is known to have one, or the one
// chosen is gone. It may be called at any time.
func (c *ToolClient) SetWorkers(offers map[string][]slots.Offer) { c.picks.Set(offers) }

// Queued returns the number of calls of tool that wait in the client for a
// slot of the fleet (see SetCapacity). For metrics and tests.
func (c *ToolClient) Queued(tool string) int {
	c.gatesMu.Lock()
	g := c.gates[tool]
	c.gatesMu.Unlock()
	if g == nil {
		return 0
	}
	_, waiting, _ := g.State()
	return waiting
}

// gate returns the gate of tool name, nil when it is not limited.
func (c *ToolClient) gate(name string) *slots.Gate {
	c.gatesMu.Lock()
	defer c.gatesMu.Unlock()
	g := c.gates[name]
	if g == nil && c.capacity[name] > 0 {
		g = slots.NewGate(c.capacity[name])
		c.gates[name] = g
	}
	return g
}

// Close stops the client; calls in flight end with an error.
func (c *ToolClient) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.sub.Unsubscribe() })
	return c.closeErr
}

// route hands a frame to the call it belongs to. It never blocks (see
// inflight.offer), so that one slow call cannot hold up the frames of the
// others.
func (c *ToolClient) route(m *nats.Msg) {
	seq, err := strconv.ParseUint(m.Subject[len(c.inbox):], 36, 64)
	if err != nil {
		return // not one of our inboxes
	}
	var d delivery
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		d.noResponder = true
	} else {
		d.f, d.err = wire.DecodeFrame(m.Data)
		if d.err != nil {
			d.worker = wire.FrameWorker(m.Data)
		}
	}
	c.mu.Lock()
	if call := c.calls[seq]; call != nil { // else a late frame of a call that ended
		call.offer(d)
	}
	c.mu.Unlock()
}

// register gives call a new inbox and enters it in the routing table.
func (c *ToolClient) register(call *inflight) {
	call.seq = c.seq.Add(1)
	var b [96]byte
	call.reply = string(strconv.AppendUint(append(b[:0], c.inbox...), call.seq, 36))
	c.mu.Lock()
	c.calls[call.seq] = call
	c.mu.Unlock()
}

// unregister takes call out of the routing table and drops the frames left
// in it: no frame reaches it afterwards.
func (c *ToolClient) unregister(call *inflight) {
	c.mu.Lock()
	delete(c.calls, call.seq)
	c.mu.Unlock()
	call.drain()
}

// toolSubject returns the request subject of tool name.
func (c *ToolClient) toolSubject(name string) string {
	c.toolSubjectsMu.RLock()
	s, ok := c.toolSubjects[name]
	c.toolSubjectsMu.RUnlock()
	if ok {
		return s
	}
	s = c.subjects.Tool(name)
	c.toolSubjectsMu.Lock()
	if len(c.toolSubjects) < 4096 { // tools of a fleet; bounded all the same
		c.toolSubjects[name] = s
	}
	c.toolSubjectsMu.Unlock()
	return s
}

// lostError is an attempt whose worker went silent, with that worker's
// name/id, so that the retry can name it.
type lostError struct {
	worker string
	err    error
}

func (e *lostError) Error() string { return e.err.Error() }
func (e *lostError) Unwrap() error { return e.err }

// Execute runs req on the fleet. It sends the call to a worker (the one
// with the most free slots, see SetWorkers, else the queue group's pick),
// streams its progress, and returns its result. A busy worker's refusal
// sends the call again, after a backoff (see BusyBackoff), to the worker
// chosen then; a call still refused when its timeout ends
// never ran, and is not retried. Each
// attempt is bounded by the call's timeout; an attempt that times out or
// whose worker is lost is retried, with backoff, up to MaxAttempts when the
// tool is idempotent or read-only (req.Retryable), and reported as of
// unknown outcome otherwise. Every retry is announced as a partial result
// {"retry": {"attempt", "reason", "worker"}} (worker: the lost one, when
// one had taken the call). It fails with ErrNoResponders when no
// worker serves the tool, ErrTimeout or ErrWorkerLost when the attempts are
// spent, and with a *ResultError when the worker answered with an error
// result.
func (c *ToolClient) Execute(ctx context.Context, req *Call, progress func(partial any)) (*agentfleet.ToolResult, error) {
	var (
		res   *agentfleet.ToolResult
		ended bool // the last attempt's outcome is the call's
	)
	p := lostBackoff(c.cfg)
	p.OnRetry = func(attempt int, err error, _ time.Duration) {
		retry := map[string]any{"attempt": attempt + 1, "reason": err.Error()}
		lostWorker := ""
		if le, ok := errors.AsType[*lostError](err); ok {
			retry["worker"], lostWorker = le.worker, le.worker
		}
		progress(map[string]any{"retry": retry})
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent(tracing.EventRetry, trace.WithAttributes(
				tracing.ToolAttempt.Int(attempt+1), tracing.Reason.String(err.Error()), tracing.Worker.String(lostWorker)))
		}
	}
	err := retry.Do(ctx, p, func(ctx context.Context, attempt int) error {
		r, err := c.execute(ctx, req, attempt, progress)
		if _, ok := errors.AsType[*notSentError](err); ok {
			// No worker took the call: its outcome is known, and another
			// attempt would wait for the same full fleet.
			ended = true
			return retry.Permanent(err)
		}
		// No responders was waited for within the attempt already.
		lost := errors.Is(err, ErrWorkerLost) || errors.Is(err, ErrTimeout)
		switch {
		case !lost || ctx.Err() != nil:
			if r != nil {
				r.Attempts = attempt
			}
			res, ended = r, true
			return retry.Permanent(err)
		case !req.Retryable:
			ended = true
			return retry.Permanent(fmt.Errorf("%w; the call's outcome is unknown and it was not retried, because tool %s is not marked idempotent or read_only", err, req.Name))
		case attempt >= c.cfg.MaxAttempts:
			ended = true
			return retry.Permanent(fmt.Errorf("%w (after %d attempts)", err, attempt))
		}
		return err
	})
	if err != nil && !ended && ctx.Err() != nil {
		return nil, ctx.Err() // ctx ended while waiting to try again
	}
	return res, err
}

// execute makes one attempt, bounded by the call's timeout, sending it again
// while workers refuse it as busy. The attempt has one record and one
// timer, for the timeout, the watchdog and the busy backoff alike.
func (c *ToolClient) execute(ctx context.Context, req *Call, attempt int, progress func(partial any)) (*agentfleet.ToolResult, error) {
	var deadline time.Time // zero: no timeout
	if req.Timeout > 0 {
		deadline = time.Now().Add(req.Timeout)
	}
	buf, err := encodeCall(req, attempt)
	if err != nil {
		return nil, fmt.Errorf("Tool %s: arguments do not encode: %w", req.Name, err)
	}
	defer wire.PutBuffer(buf) // NATS copies what it sends
	data := buf.Bytes()
	// The call's trace context goes with every request of the attempt; that
	// of a trace sampled out too, so that the worker does not record the
	// call as a trace of its own.
	var hdr nats.Header
	if trace.SpanContextFromContext(ctx).IsValid() {
		hdr = tracing.Inject(ctx, nil)
	}
	hdr = withFence(hdr, req.Fence)
	// The slot is held through busy refusals and their backoff too: a
	// refusal means the fleet is fuller than this client knows, and the
	// calls behind this one would find it so as well.
	if g := c.gate(req.Name); g != nil {
		if err := c.acquire(ctx, g, deadline, req); err != nil {
			return nil, err
		}
		defer g.Release()
	}
	call := newInflight()
	handedOff := false
	defer func() {
		if !handedOff {
			call.release()
		}
	}()
	var nobody time.Time // when the first no-responders answer came
	for busy := 0; ; busy++ {
		res, again, handed, err := c.attempt(ctx, call, deadline, req, attempt, data, hdr, progress)
		if handed {
			handedOff = true
			return res, err
		}
		if errors.Is(err, ErrNoResponders) {
			// Not delivered to anyone: safe to send again for any tool,
			// while a worker may still come.
			if nobody.IsZero() {
				nobody = time.Now()
			}
			if time.Since(nobody) < c.cfg.NoResponderWait {
				again = true
			} else if busy > 0 {
				err = fmt.Errorf("%w, for %v", err, time.Since(nobody).Round(time.Millisecond))
			}
		}
		if !again {
			return res, err
		}
		wakeup := time.Now().Add(busyBackoff(c.cfg).Delay(busy + 1))
		call.arm(deadline, wakeup)
		var ended error // why the wait ended early: ErrTimeout, or ctx's
		select {
		case <-call.timer.C:
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				ended = ErrTimeout
			}
		case <-ctx.Done():
			call.timer.Stop()
			ended = ctx.Err()
		}
		if ended != nil {
			if err != nil { // no responders
				return nil, &notSentError{fmt.Errorf("%w; waited %v for a worker, until %w", err, time.Since(nobody).Round(time.Millisecond), c.endErr(ctx, ended, req, "", "; the call never ran"))}
			}
			return nil, &notSentError{c.endErr(ctx, ended, req, "", fmt.Sprintf("while every worker was busy (%d refusals); the call never ran", busy+1))}
		}
	}
}

// acquire takes a slot of gate g for the call, waiting until its deadline
// (if not zero) or the end of ctx.
func (c *ToolClient) acquire(ctx context.Context, g *slots.Gate, deadline time.Time, req *Call) error {
	if g.TryAcquire() {
		return nil
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, deadline, ErrTimeout)
		defer cancel()
	}
	if err := g.Acquire(ctx); err != nil {
		_, _, limit := g.State()
		return &notSentError{c.ctxErr(ctx, req, "", fmt.Sprintf("while waiting for one of the fleet's %d slots for the tool; the call never ran", limit))}
	}
	return nil
}

// cancelLate waits up to AckTimeout for the ack of an abandoned call and
// cancels the call on the worker that took it; then it releases call.
func (c *ToolClient) cancelLate(call *inflight, id string) {
	defer call.release()
	defer c.unregister(call)
	call.timer.Reset(c.cfg.AckTimeout)
	for {
		select {
		case <-call.timer.C:
			return
		case d := <-call.frames:
			if d.f == nil {
				return
			}
			switch d.f.T {
			case wire.FrameAck:
				c.cancel(d.f.Cancel, id, call.reply)
				return
			case wire.FrameResult, wire.FrameError, wire.FrameBusy:
				return
			}
		}
	}
}

// cancel tells the worker to stop a call; best effort. The subject comes
// from the worker's ack: only a worker's cancel subject of this prefix
// (<prefix>.worker.<id>.cancel) is used, so that a rogue responder cannot
// make the orchestrator publish where it likes.
func (c *ToolClient) cancel(subject, id, inbox string) {
	if !c.subjects.IsCancel(subject) {
		return
	}
	b, _ := wire.EncodeFrame(&wire.Frame{T: wire.FrameCancel, ID: id, Inbox: inbox})
	_ = c.nc.Publish(subject, b)
}

func (c *ToolClient) observe(tool, outcome, worker string) {
	if c.cfg.Observe != nil {
		c.cfg.Observe(tool, outcome, worker)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orUnknown(s string) string { return orDefault(s, "(unknown)") }

// encodeCall encodes the call request of one attempt of req into a buffer
// of the wire's pool, to be given back with PutBuffer once sent.
func encodeCall(req *Call, attempt int) (*bytes.Buffer, error) {
	return wire.EncodeRequestBuf(wire.CallRequest{
		V: wire.ProtocolVersion, ID: req.ID, Tool: req.Name, Args: req.Args,
		TimeoutMS: req.Timeout.Milliseconds(), Attempt: attempt,
		Agent: req.Agent, Session: req.Session, RunID: req.RunID, Allowed: req.Allowed, Gated: req.Gated,
	})
}
