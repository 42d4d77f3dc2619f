package toolrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/microsvc"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/trace"
)

// ServerConfig configures a ToolServer. Tools is required; every other field
// is optional and its zero value means the documented default.
type ServerConfig struct {
	// Name is the micro service name; default "toolworker".
	Name string
	// Version is the service's SemVer version; default "0.1.0".
	Version string
	// Prefix is the subject prefix; default DefaultPrefix.
	Prefix string
	// Tools are the tools served; each must have a Handler.
	Tools []*agentfleet.Tool
	// Concurrency bounds the calls running at once; default 64. A call that
	// arrives at the limit is refused with a busy frame at once, so that the
	// orchestrator sends it to another worker.
	Concurrency int
	// Heartbeat is the interval of heartbeat frames; default 1s, within
	// [MinHeartbeat, MaxHeartbeat].
	Heartbeat time.Duration
	// Beat is the interval of the worker's presence beats on
	// <prefix>.fleet; default DefaultBeat, within [MinBeat, MaxBeat].
	Beat time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Observe, if set, is called when a call ends, with its tool, outcome
	// ("ok", "error", "canceled", "busy", "bad_request", "too_large",
	// "no_reply", "fenced") and duration. For metrics.
	Observe func(tool, outcome string, d time.Duration)
	// Tracer, if set, records each call run as a span under the trace
	// context its request carries (calltrace.go).
	Tracer trace.Tracer
	// Kind, when set, is advertised as the service's MetaKind: KindBuiltin,
	// KindScripted or KindMCP. Without it the service is a foreign worker
	// to discovery.
	Kind string
	// Admit, if set, is asked before a call is taken whether the process
	// has room for it besides a slot (the scripts' shared memory budget):
	// an error refuses the call as busy, with the error's text in the
	// Agentfleet-Busy header, so that the orchestrator sends it to another
	// worker; otherwise release is called once the call ends.
	Admit func(t *agentfleet.Tool) (release func(), err error)
	// Outcomes, if set, is where the outcome of each call of a tool that is
	// neither idempotent nor read-only is recorded before its result is
	// sent, so that an orchestrator taking over the call's run uses it
	// (outcome.go). Without it, such a call in flight when its
	// orchestrator stopped is of unknown outcome.
	Outcomes *Outcomes
	// FenceTTL is how long the worker remembers a partition's highest
	// fence epoch after its last call (fence.go); default DefaultFenceTTL.
	// FenceKeys bounds the partitions remembered; default DefaultFenceKeys.
	FenceTTL  time.Duration
	FenceKeys int
}

// ToolServer serves tools to the fleet as a NATS micro service: one endpoint
// per tool on <prefix>.tool.<name>, in queue group QueueGroup, which also
// takes the calls sent to this worker alone on <prefix>.tool.<name>.<id>.
type ToolServer struct {
	nc       *nats.Conn
	cfg      ServerConfig
	subjects bus.Subjects
	svc      *microsvc.Service
	id       string
	log      *slog.Logger
	replies  bus.ReplyGuard
	fences   *fences
	// name is Name(), and cancelSubject the subject of cancels to this
	// worker: in every ack, built once.
	name, cancelSubject string

	cancelSub *nats.Subscription
	slots     chan struct{}
	// idle hands calls to runners waiting for one; stopped, closed once
	// the server stopped, ends them (runner.go).
	idle     chan *call
	stopped  chan struct{}
	stopOnce sync.Once
	inFlight atomic.Int64
	wg       sync.WaitGroup

	// Messages the server drops without an answer, counted and warned
	// about at most once a second: a flood of them must not flood the log.
	noReply, badCancel microsvc.RateLog

	mu    sync.Mutex
	calls map[callKey]*call
	// draining is set by Drain and Stop: the calls that reach the handler
	// from then on are refused. Under mu with wg.Add, so that no call joins
	// wg once Drain waits on it.
	draining bool

	beatStop, beatDone chan struct{}
	beatOnce           sync.Once
}

// ErrCanceledByOrchestrator is the cause of a call's context when the
// orchestrator sent a cancel frame.
var ErrCanceledByOrchestrator = errors.New("call canceled by the orchestrator")

// Serve starts serving cfg.Tools on nc and announces the worker to the
// fleet. The error says which tool or setting is wrong.
func Serve(nc *nats.Conn, cfg ServerConfig) (*ToolServer, error) {
	if cfg.Name == "" {
		cfg.Name = "toolworker"
	}
	if cfg.Version == "" {
		cfg.Version = "0.1.0"
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.Beat <= 0 {
		cfg.Beat = fleet.DefaultBeat
	}
	cfg.Beat = min(max(cfg.Beat, fleet.MinBeat), fleet.MaxBeat)
	// Clients clamp the interval a worker announces; beating outside the
	// range would have them declare the worker lost, or heartbeats flood.
	cfg.Heartbeat = wire.ClampHeartbeat(cfg.Heartbeat)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	subjects, err := bus.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if len(cfg.Tools) == 0 {
		return nil, errors.New("tool server: no tools to serve")
	}
	for _, t := range cfg.Tools {
		if err := bus.CheckToken("tool", t.Name); err != nil {
			return nil, fmt.Errorf("tool server: %w", err)
		}
		if t.Handler == nil {
			return nil, fmt.Errorf("tool server: tool %q has no handler", t.Name)
		}
	}
	s := &ToolServer{
		nc: nc, cfg: cfg, subjects: subjects, log: cfg.Logger,
		replies: bus.ReplyGuard{},
		slots:   make(chan struct{}, cfg.Concurrency),
		idle:    make(chan *call), stopped: make(chan struct{}),
		calls:  make(map[callKey]*call),
		fences: newFences(cfg.FenceTTL, cfg.FenceKeys),
	}
	s.svc, err = microsvc.New(nc, microsvc.Config{
		Name:        cfg.Name,
		Version:     cfg.Version,
		Description: "agentfleet tool worker",
		QueueGroup:  bus.QueueGroup,
		Metadata: map[string]string{
			fleet.MetaProtocol:    fmt.Sprint(wire.ProtocolVersion),
			"prefix":              subjects.Prefix,
			fleet.MetaConcurrency: fmt.Sprint(cfg.Concurrency),
			fleet.MetaBeat:        fmt.Sprint(cfg.Beat.Milliseconds()),
			fleet.MetaKind:        cfg.Kind,
			fleet.MetaDirect:      "true",
		},
		Replies: s.replies,
		// $SRV.STATS carries the worker's calls in flight (over all its
		// tools) in each endpoint's data, for dashboards.
		StatsData: func() any { return fleet.WorkerLoad{InFlight: s.InFlight()} },
		Logger:    cfg.Logger,
		Refused:   &s.noReply,
	})
	if err != nil {
		return nil, fmt.Errorf("tool server: %w", err)
	}
	s.id = s.svc.ID()
	s.name, s.cancelSubject = cfg.Name+"/"+s.id, subjects.Cancel(s.id)
	s.cancelSub, err = nc.Subscribe(s.cancelSubject, s.onCancel)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("tool server: %w", err), s.svc.Stop())
	}
	for _, t := range cfg.Tools {
		if err := s.svc.AddEndpoint(t.Name, subjects.Tool(t.Name), subjects.WorkerTool(t.Name, s.id), fleet.ToolMetadata(&t.ToolDef), s.handler(t)); err != nil {
			return nil, errors.Join(fmt.Errorf("tool server: tool %q: %w", t.Name, err), s.svc.Stop(), s.cancelSub.Unsubscribe())
		}
	}
	if err := nc.Flush(); err != nil {
		return nil, errors.Join(fmt.Errorf("tool server: %w", err), s.svc.Stop(), s.cancelSub.Unsubscribe())
	}
	s.announce("joined")
	s.beatStop, s.beatDone = make(chan struct{}), make(chan struct{})
	go s.beat()
	return s, nil
}

// beat says every Beat that the worker is there, with its tools, so that
// orchestrators add it within a beat of its start or of a reconnect, and
// remove it a few beats after it died.
func (s *ToolServer) beat() {
	defer close(s.beatDone)
	t := time.NewTicker(s.cfg.Beat)
	defer t.Stop()
	for {
		select {
		case <-s.beatStop:
			return
		case <-t.C:
			if s.nc.IsConnected() {
				s.announce("beat")
			}
		}
	}
}

// stopBeat stops the beats, once.
func (s *ToolServer) stopBeat() {
	s.beatOnce.Do(func() {
		close(s.beatStop)
		<-s.beatDone
	})
}

// ID returns the worker's micro service instance id.
func (s *ToolServer) ID() string { return s.id }

// Name returns "name/id", the worker's name in events.
func (s *ToolServer) Name() string { return s.name }

// InFlight returns the number of calls running.
func (s *ToolServer) InFlight() int { return int(s.inFlight.Load()) }

// Concurrency returns the limit of calls running at once.
func (s *ToolServer) Concurrency() int { return s.cfg.Concurrency }

func (s *ToolServer) announce(event string) {
	n := fleet.FleetNotice{Event: event, Service: s.cfg.Name, ID: s.id, BeatMS: s.cfg.Beat.Milliseconds()}
	for _, t := range s.cfg.Tools {
		n.Tools = append(n.Tools, t.Name)
	}
	b, _ := json.Marshal(n)
	if err := s.nc.Publish(s.subjects.Fleet(), b); err != nil {
		s.log.Warn("announce to fleet", "event", event, "err", err)
	}
}

// Drain stops taking calls, waits for the calls in flight to finish (or ctx
// to end, which cancels them) and stops the service. Calls that still reach
// it are refused as busy, so that they go to another worker. Their final
// frames are published, not flushed: flush the connection (see Drain) before
// the process exits.
func (s *ToolServer) Drain(ctx context.Context) error {
	return s.drain(ctx, false)
}

func (s *ToolServer) drain(ctx context.Context, force bool) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	// Stop drains the endpoints' subscriptions: the requests they already
	// hold still reach the handler after it returns, and are refused.
	err := s.svc.Stop()
	s.stopBeat()
	s.announce("left")
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancelAll(ctx.Err())
		<-done
		if !force {
			err = errors.Join(err, fmt.Errorf("tool server: drain: %w", ctx.Err()))
		}
	}
	s.stopOnce.Do(func() { close(s.stopped) })
	return errors.Join(err, s.cancelSub.Unsubscribe())
}

// Stop cancels the calls in flight and stops at once.
func (s *ToolServer) Stop() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return s.drain(ctx, true)
}

func (s *ToolServer) cancelAll(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		c.cancel(cause)
	}
}

func (s *ToolServer) onCancel(m *nats.Msg) {
	f, err := wire.DecodeCancel(m.Data)
	if err != nil {
		if warn, n := s.badCancel.Count(); warn {
			s.log.Warn("ignoring a bad cancel frame", "subject", m.Subject, "err", err, "ignored_so_far", n)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Inbox != "" {
		if c := s.calls[callKey{f.ID, f.Inbox}]; c != nil {
			c.cancel(ErrCanceledByOrchestrator)
		}
		return
	}
	for _, c := range s.calls { // a client that names no inbox
		if c.req.ID == f.ID {
			c.cancel(ErrCanceledByOrchestrator)
		}
	}
}

func (s *ToolServer) observe(tool, outcome string, d time.Duration) {
	if s.cfg.Observe != nil {
		s.cfg.Observe(tool, outcome, d)
	}
}

// handler returns the handler of one tool's endpoint. It runs on the
// endpoint's two subscriptions, one request at a time on each, so it only checks the
// request and a free slot, and runs the call in a goroutine (see call). It
// returns the error it answered a refusal with, for the endpoint's stats,
// or async for a request recorded already (a bad request, before its
// answer) or a call it started, which records itself when it ends.
func (s *ToolServer) handler(t *agentfleet.Tool) func(req *nats.Msg, ep *microsvc.Endpoint) (answeredErr string, async bool) {
	return func(req *nats.Msg, ep *microsvc.Endpoint) (answeredErr string, async bool) {
		start := time.Now()
		if err := s.replies.Check(req.Reply); err != nil {
			// Nobody could read the result, nor tell the call to stop: a
			// call without a reply subject is a mistake or an attack, and
			// running it would only spend a slot. A reply outside inbox
			// space is an attack: the frames would be published with the
			// worker's rights on a subject of the sender's choosing.
			s.refuseNoReply(t, err)
			s.observe(t.Name, "no_reply", time.Since(start))
			return "", false
		}
		creq, err := wire.DecodeRequest(req.Data)
		if err == nil && creq.Tool != t.Name {
			err = fmt.Errorf("call request names tool %q but was sent to the endpoint of %q", creq.Tool, t.Name)
		}
		if err != nil {
			// Counted before the answer, so that whoever reads the
			// stats after it finds the error in them.
			ep.Record(time.Since(start), bus.HeaderValue(err.Error()))
			s.sendError(req.Reply, "", wire.CodeBadRequest, err.Error())
			s.observe(t.Name, "bad_request", time.Since(start))
			return "", true
		}
		fence, ok := s.checkFence(req, t.Name, creq, start)
		if !ok {
			return "", false
		}
		select {
		case s.slots <- struct{}{}:
		default:
			s.refuse(req, t, creq, "worker busy", start)
			return "", false
		}
		var admitted func()
		if s.cfg.Admit != nil {
			if admitted, err = s.cfg.Admit(t); err != nil {
				<-s.slots
				s.refuse(req, t, creq, "worker busy: "+err.Error(), start)
				return "", false
			}
		}
		c := s.newCall(t, creq, req.Reply, req.Header, start)
		c.admitted = admitted
		c.ep = ep
		c.ctx.caller.Fence = fence
		s.mu.Lock()
		if s.draining {
			// The call was sent before the server took our unsubscription.
			// Refused as busy, it goes to another worker; run here, it could
			// outlive the drain and lose its result.
			s.mu.Unlock()
			c.cancel(nil)
			c.outcome = "draining"
			c.endSpan()
			c.release()
			<-s.slots
			s.refuse(req, t, creq, "worker draining", start)
			return "", false
		}
		// Calls are keyed by id and reply inbox: ids come from models and
		// may repeat across sessions; the inbox is unique per attempt.
		s.calls[c.key] = c
		s.wg.Add(1)
		s.mu.Unlock()
		s.inFlight.Add(1)
		s.start(c)
		return "", true
	}
}

// callKey names a call on the worker: its id and its reply inbox.
type callKey struct{ id, inbox string }

// HeaderBusy is set on busy refusals, to why the worker refused ("worker
// busy", "worker draining"), for operators reading traffic.
const HeaderBusy = "Agentfleet-Busy"

// NoReply returns the number of requests refused because they had no reply
// subject, or one that the server's ReplyGuard refused.
func (s *ToolServer) NoReply() uint64 { return s.noReply.N() }

// BadCancels returns the number of messages on the cancel subject that were
// not cancels.
func (s *ToolServer) BadCancels() uint64 { return s.badCancel.N() }

func (s *ToolServer) refuseNoReply(t *agentfleet.Tool, err error) {
	if warn, n := s.noReply.Count(); warn {
		s.log.Warn("refused a call request; not run, not answered", "tool", t.Name, "err", err, "refused_so_far", n)
	}
}

// refuse answers a call with a busy frame, which sends it to another worker.
// A refusal is flow control, not a failure of the service: it is answered
// without micro's error headers, which would count it in the endpoint's
// num_errors (`nats micro stats`).
func (s *ToolServer) refuse(req *nats.Msg, t *agentfleet.Tool, creq *wire.CallRequest, why string, start time.Time) {
	buf, _ := wire.EncodeFrameBuf(&wire.Frame{T: wire.FrameBusy, ID: creq.ID, Worker: s.name, InFlight: s.InFlight(), Limit: s.cfg.Concurrency})
	m := nats.NewMsg(req.Reply)
	m.Data = buf.Bytes()
	m.Header.Set(HeaderBusy, bus.HeaderValue(why))
	if err := s.nc.PublishMsg(m); err != nil {
		s.log.Warn("send busy frame", "err", err)
	}
	wire.PutFrameBuf(buf)
	s.observe(t.Name, "busy", time.Since(start))
}

// sendError sends a final error frame with the micro error headers, which
// `nats micro` and other micro clients read.
func (s *ToolServer) sendError(reply, id, code, msg string) {
	buf, _ := wire.EncodeFrameBuf(&wire.Frame{T: wire.FrameError, ID: id, Worker: s.name, Error: msg, Code: code})
	m := nats.NewMsg(reply)
	m.Data = buf.Bytes()
	m.Header.Set(micro.ErrorHeader, bus.HeaderValue(msg))
	m.Header.Set(micro.ErrorCodeHeader, code)
	if err := s.nc.PublishMsg(m); err != nil {
		s.log.Warn("send error frame", "err", err)
	}
	wire.PutFrameBuf(buf)
}

// Caller is the agent on whose behalf a scripted tool runs, with the tools
// that agent may use. A nil or empty Allowed allows no tool: a call request
// without an allowed list gets a caller like that. Gated names the agent's
// tools that need a person's decision, which no nested call may reach; it
// grants nothing.
type Caller struct {
	Agent, Session, RunID string
	Allowed               []string
	Gated                 []string
	// Fence is the fence the call came with (HeaderFence); its Epoch is 0
	// when it came with none. A call the tool makes for the caller passes
	// it on.
	Fence ownership.Fence
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}
