package bus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats.go"
)

// Headers set on call requests, for tracing and de-duplication by workers
// and for operators reading traffic with `nats sub`.
const (
	HeaderCallID  = "Agentfleet-Call-Id"
	HeaderAttempt = "Agentfleet-Attempt"
	HeaderRunID   = "Agentfleet-Run-Id"
)

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

// ToolClient executes tool calls on the fleet. It implements
// pipeline.Executor: one request on the tool's subject, then frames on a
// reply inbox until the final one. It is safe for concurrent use.
type ToolClient struct {
	closeOnce sync.Once
	closeErr  error
	nc        *nats.Conn
	cfg       ClientConfig
	subjects  Subjects
	inbox     string // prefix of the per-call inboxes, ends with "."
	sub       *nats.Subscription
	seq       atomic.Uint64

	mu    sync.Mutex
	calls map[string]*inflight

	// gates bound the calls in flight per tool to the fleet's capacity;
	// a tool has one only while it has a capacity, or calls in its gate.
	gatesMu  sync.Mutex
	gates    map[string]*gate
	capacity map[string]int
}

var _ pipeline.Executor = (*ToolClient)(nil)

type inflight struct {
	frames chan delivery
	done   chan struct{}
}

type delivery struct {
	f           *Frame
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
	subjects, err := NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	c := &ToolClient{nc: nc, cfg: cfg, subjects: subjects, inbox: nc.NewRespInbox() + ".", calls: make(map[string]*inflight), gates: map[string]*gate{}}
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
		g.setLimit(caps[name])
		if running, waiting, limit := g.state(); running == 0 && waiting == 0 && limit == 0 {
			delete(c.gates, name)
		}
	}
}

// Queued returns the number of calls of tool that wait in the client for a
// slot of the fleet (see SetCapacity). For metrics and tests.
func (c *ToolClient) Queued(tool string) int {
	c.gatesMu.Lock()
	g := c.gates[tool]
	c.gatesMu.Unlock()
	if g == nil {
		return 0
	}
	_, waiting, _ := g.state()
	return waiting
}

// gate returns the gate of tool name, nil when it is not limited.
func (c *ToolClient) gate(name string) *gate {
	c.gatesMu.Lock()
	defer c.gatesMu.Unlock()
	g := c.gates[name]
	if g == nil && c.capacity[name] > 0 {
		g = &gate{limit: c.capacity[name]}
		c.gates[name] = g
	}
	return g
}

// Close stops the client; calls in flight end with an error.
func (c *ToolClient) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.sub.Unsubscribe() })
	return c.closeErr
}

// route hands a frame to the call it belongs to.
func (c *ToolClient) route(m *nats.Msg) {
	token := m.Subject[len(c.inbox):]
	c.mu.Lock()
	call := c.calls[token]
	c.mu.Unlock()
	if call == nil {
		return // a late frame of a call that ended
	}
	var d delivery
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		d.noResponder = true
	} else {
		d.f, d.err = DecodeFrame(m.Data)
		if d.err != nil {
			d.worker = FrameWorker(m.Data)
		}
	}
	if d.f != nil && (d.f.T == FrameHeartbeat || d.f.T == FrameProgress) {
		// Progress and heartbeats must not stall the subscription; if the
		// call is that far behind, dropping one is harmless.
		select {
		case call.frames <- d:
		default:
		}
		return
	}
	select {
	case call.frames <- d:
	case <-call.done:
	}
}

// lostError is an attempt whose worker went silent, with that worker's
// name/id, so that the retry can name it.
type lostError struct {
	worker string
	err    error
}

func (e *lostError) Error() string { return e.err.Error() }
func (e *lostError) Unwrap() error { return e.err }

// Execute implements pipeline.Executor. It sends the call to a worker,
// streams its progress, and returns its result. A busy worker's refusal
// sends the call again, after a backoff (see BusyBackoff), to whichever
// worker the queue group picks; a call still refused when its timeout ends
// never ran, and is not retried. Each
// attempt is bounded by the call's timeout; an attempt that times out or
// whose worker is lost is retried, with backoff, up to MaxAttempts when the
// tool is idempotent or read-only, and reported as of unknown outcome
// otherwise. Every retry is announced as a partial result
// {"retry": {"attempt", "reason", "worker"}} (worker: the lost one, when
// one had taken the call). It fails with ErrNoResponders when no
// worker serves the tool, ErrTimeout or ErrWorkerLost when the attempts are
// spent.
func (c *ToolClient) Execute(ctx context.Context, prep *pipeline.Prepared, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
	retryable := prep.Tool != nil && (prep.Tool.Annotations.Idempotent || prep.Tool.Annotations.ReadOnly)
	for attempt := 1; ; attempt++ {
		res, err := c.execute(ctx, prep, attempt, progress)
		if _, ok := errors.AsType[*notSentError](err); ok {
			// No worker took the call: its outcome is known, and another
			// attempt would wait for the same full fleet.
			return nil, err
		}
		// No responders was waited for within the attempt already.
		lost := errors.Is(err, pipeline.ErrWorkerLost) || errors.Is(err, pipeline.ErrTimeout)
		if !lost || ctx.Err() != nil {
			if res != nil {
				res.Attempts = attempt
			}
			return res, err
		}
		if !retryable {
			return nil, fmt.Errorf("%w; the call's outcome is unknown and it was not retried, because tool %s is not marked idempotent or read_only", err, prep.Call.Name)
		}
		if attempt >= c.cfg.MaxAttempts {
			return nil, fmt.Errorf("%w (after %d attempts)", err, attempt)
		}
		retry := map[string]any{"attempt": attempt + 1, "reason": err.Error()}
		if le, ok := errors.AsType[*lostError](err); ok {
			retry["worker"] = le.worker
		}
		progress(map[string]any{"retry": retry})
		wait := c.cfg.RetryBackoff << (attempt - 1)
		wait = wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// execute makes one attempt, bounded by the call's timeout, sending it again
// while workers refuse it as busy.
func (c *ToolClient) execute(ctx context.Context, prep *pipeline.Prepared, attempt int, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
	if prep.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, prep.Timeout, pipeline.ErrTimeout)
		defer cancel()
	}
	req := &CallRequest{
		V: ProtocolVersion, ID: prep.Call.ID, Tool: prep.Call.Name, Args: prep.Args,
		TimeoutMS: prep.Timeout.Milliseconds(), Attempt: attempt,
		Agent: prep.Agent, Session: prep.Session, RunID: prep.RunID, Allowed: prep.Allowed,
	}
	data, err := EncodeRequest(req)
	if err != nil {
		return nil, fmt.Errorf("Tool %s: arguments do not encode: %w", prep.Call.Name, err)
	}
	// The slot is held through busy refusals and their backoff too: a
	// refusal means the fleet is fuller than this client knows, and the
	// calls behind this one would find it so as well.
	if g := c.gate(prep.Call.Name); g != nil {
		if err := g.acquire(ctx); err != nil {
			_, _, limit := g.state()
			return nil, &notSentError{c.ctxErr(ctx, prep, "", fmt.Sprintf("while waiting for one of the fleet's %d slots for the tool; the call never ran", limit))}
		}
		defer g.release()
	}
	var nobody time.Time // when the first no-responders answer came
	for busy := 0; ; busy++ {
		res, again, err := c.attempt(ctx, prep, attempt, data, progress)
		if errors.Is(err, pipeline.ErrNoResponders) {
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
		t := time.NewTimer(c.busyWait(busy))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if err != nil { // no responders
				return nil, &notSentError{fmt.Errorf("%w; waited %v for a worker, until %w", err, time.Since(nobody).Round(time.Millisecond), c.ctxErr(ctx, prep, "", "; the call never ran"))}
			}
			return nil, &notSentError{c.ctxErr(ctx, prep, "", fmt.Sprintf("while every worker was busy (%d refusals); the call never ran", busy+1))}
		}
	}
}

// busyWait returns the wait before sending a call again after its
// refusals+1-th busy refusal: a random duration up to BusyBackoff doubled
// once per earlier refusal, capped at MaxBusyBackoff (full jitter).
func (c *ToolClient) busyWait(refusals int) time.Duration {
	bound := c.cfg.MaxBusyBackoff
	if refusals < 30 {
		bound = min(bound, c.cfg.BusyBackoff<<refusals)
	}
	return time.Duration(rand.Int64N(int64(bound) + 1))
}

// notSentError is an error of a call that no worker took (it waited for a
// free worker until its timeout or abort), so that Execute neither retries
// it nor calls its outcome unknown.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// attempt sends one request and follows it to its end. again reports a busy
// refusal.
func (c *ToolClient) attempt(ctx context.Context, prep *pipeline.Prepared, attempt int, data []byte, progress pipeline.ProgressFunc) (res *agentfleet.ToolResult, again bool, err error) {
	token := strconv.FormatUint(c.seq.Add(1), 36)
	// Progress and heartbeats beyond the buffer are dropped rather than
	// stall the subscription; final frames always get through.
	call := &inflight{frames: make(chan delivery, 32), done: make(chan struct{})}
	c.mu.Lock()
	c.calls[token] = call
	c.mu.Unlock()
	handedOff := false
	defer func() {
		if !handedOff {
			c.forget(token, call)
		}
	}()

	msg := nats.NewMsg(c.subjects.Tool(prep.Call.Name))
	msg.Reply = c.inbox + token
	msg.Data = data
	// The call id comes from the model: one line, bounded, in the header.
	msg.Header.Set(HeaderCallID, HeaderValue(prep.Call.ID))
	msg.Header.Set(HeaderAttempt, strconv.Itoa(attempt))
	if prep.RunID != "" {
		msg.Header.Set(HeaderRunID, HeaderValue(prep.RunID))
	}
	if err := c.nc.PublishMsg(msg); err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			return nil, false, fmt.Errorf("Tool %s: the call's arguments of %d bytes exceed the NATS max payload of %d bytes", prep.Call.Name, len(data), c.nc.MaxPayload())
		}
		return nil, false, fmt.Errorf("Tool %s: sending the call: %w", prep.Call.Name, err)
	}

	var (
		worker, cancelSubject string
		window                = c.cfg.AckTimeout
	)
	watchdog := time.NewTimer(window)
	defer watchdog.Stop()
	for {
		select {
		case <-ctx.Done():
			if cancelSubject == "" {
				// The worker may have taken the call without its ack
				// having reached us yet: wait for that ack elsewhere, so
				// that the cancel still reaches the worker.
				handedOff = true
				go c.cancelLate(token, call, prep.Call.ID)
			} else {
				c.cancel(cancelSubject, prep.Call.ID, token)
			}
			return nil, false, c.ctxErr(ctx, prep, worker, "")
		case <-watchdog.C:
			c.cancel(cancelSubject, prep.Call.ID, token)
			c.observe(prep.Call.Name, "worker_lost", worker)
			if worker == "" {
				return nil, false, fmt.Errorf("Tool %s: %w: no worker took the call within %v", prep.Call.Name, pipeline.ErrWorkerLost, c.cfg.AckTimeout)
			}
			return nil, false, &lostError{worker: worker, err: fmt.Errorf("Tool %s: %w: worker %s sent nothing for %v (%d heartbeat intervals)", prep.Call.Name, pipeline.ErrWorkerLost, worker, window, c.cfg.HeartbeatMisses)}
		case d := <-call.frames:
			switch {
			case d.noResponder:
				c.observe(prep.Call.Name, "no_responders", "")
				return nil, false, fmt.Errorf("Tool %s: %w (no worker is subscribed to %s)", prep.Call.Name, pipeline.ErrNoResponders, c.subjects.Tool(prep.Call.Name))
			case d.err != nil:
				c.cancel(cancelSubject, prep.Call.ID, token)
				c.observe(prep.Call.Name, "error", worker)
				if worker == "" {
					worker = d.worker
				}
				return nil, false, fmt.Errorf("Tool %s: worker %s sent a bad frame: %v", prep.Call.Name, orUnknown(worker), d.err)
			}
			f := d.f
			watchdog.Reset(window)
			switch f.T {
			case FrameAck:
				worker, cancelSubject = f.Worker, f.Cancel
				// Clamped: a worker's hb_ms must not overflow the window
				// nor switch loss detection off.
				if w, ok := HeartbeatWindow(f.HeartbeatMS, c.cfg.HeartbeatMisses); ok {
					window = w
					watchdog.Reset(window)
				}
			case FrameBusy:
				c.observe(prep.Call.Name, "busy", f.Worker)
				return nil, true, nil
			case FrameProgress:
				progress(f.Partial)
			case FrameHeartbeat:
			case FrameResult:
				r := f.Result
				r.Worker = orDefault(f.Worker, worker)
				r.Attempts = attempt
				if f.IsError {
					c.observe(prep.Call.Name, "error", r.Worker)
					return nil, false, &pipeline.ResultError{Result: r}
				}
				c.observe(prep.Call.Name, "ok", r.Worker)
				return r, false, nil
			case FrameError:
				c.observe(prep.Call.Name, "error", orDefault(f.Worker, worker))
				return nil, false, fmt.Errorf("%s (worker %s, code %s)", strings.TrimSpace(f.Error), orUnknown(orDefault(f.Worker, worker)), f.Code)
			}
		}
	}
}

// ctxErr explains why ctx ended: the call's timeout, or an abort.
func (c *ToolClient) ctxErr(ctx context.Context, prep *pipeline.Prepared, worker, when string) error {
	if errors.Is(context.Cause(ctx), pipeline.ErrTimeout) {
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
	c.observe(prep.Call.Name, "aborted", worker)
	return ctx.Err()
}

func (c *ToolClient) forget(token string, call *inflight) {
	close(call.done)
	c.mu.Lock()
	delete(c.calls, token)
	c.mu.Unlock()
}

// cancelLate waits up to AckTimeout for the ack of an abandoned call and
// cancels the call on the worker that took it.
func (c *ToolClient) cancelLate(token string, call *inflight, id string) {
	defer c.forget(token, call)
	t := time.NewTimer(c.cfg.AckTimeout)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return
		case d := <-call.frames:
			if d.f == nil {
				return
			}
			switch d.f.T {
			case FrameAck:
				c.cancel(d.f.Cancel, id, token)
				return
			case FrameResult, FrameError, FrameBusy:
				return
			}
		}
	}
}

// cancel tells the worker to stop a call; best effort. The subject comes
// from the worker's ack: only a worker's cancel subject of this prefix
// (<prefix>.worker.<id>.cancel) is used, so that a rogue responder cannot
// make the orchestrator publish where it likes.
func (c *ToolClient) cancel(subject, id, token string) {
	if !c.subjects.IsCancel(subject) {
		return
	}
	b, _ := EncodeFrame(&Frame{T: FrameCancel, ID: id, Inbox: c.inbox + token})
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
