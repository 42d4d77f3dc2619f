package input

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/retry"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DurableConfig configures the JetStream side of the orchestrator: the
// streams that keep input and events, and the input consumer. The zero value
// means the documented defaults.
type DurableConfig struct {
	// AckWait is how long a delivered input message may go without an ack
	// or an in-progress signal before it is delivered again; default 30s.
	AckWait time.Duration
	// MaxDeliver bounds the failed handlings of one input message (errors
	// that can pass, such as a session that could not be loaded); the last
	// one terminates it with an error event. Deliveries cut short by a
	// shutdown, a lost lead or a crash are not failures and do not count.
	// Default 5.
	MaxDeliver int
	// DuplicateWindow is how long JetStream remembers Nats-Msg-Id headers to
	// drop duplicates; default 2m.
	DuplicateWindow time.Duration
	// EventsMaxAge and EventsMaxBytes bound the events kept for late
	// observers; default 24h, and a size by EventsStorage: 128 MiB in
	// memory, 1 GiB in files (DefaultEventsMaxBytes).
	EventsMaxAge   time.Duration
	EventsMaxBytes int64
	// EventsStorage is where the event stream keeps them; default
	// EventsMemory. An event stream that exists keeps its storage
	// (SetupEventStream).
	EventsStorage EventsStorage
	// Replicas of every stream; default 1 (use 3 in a cluster).
	Replicas int
	// HistoryMaxAge and HistoryMaxBytes bound the history stream as a
	// whole (oldest messages dropped first, whatever their session);
	// default none: a session's history is bounded in order by its
	// agent's history bounds (package retention), and the stream by the
	// server's JetStream limits.
	HistoryMaxAge   time.Duration
	HistoryMaxBytes int64
	// InputMaxAge bounds how long input waits in the input stream for its
	// run; default DefaultInputMaxAge (7 days), -1 for no bound.
	// InputMaxBytes bounds the stream's size; default none. A full input
	// stream refuses new input (discard new): the sender is told, and no
	// input it accepted is dropped for it.
	InputMaxAge   time.Duration
	InputMaxBytes int64
	// PinnedTTL is how long a partition consumer stays pinned to an owner
	// that stopped pulling; default 5s. (A new owner unpins at once.)
	PinnedTTL time.Duration
	// Logger hears of what the streams' setup decided on its own (an event
	// stream that keeps its storage); default slog.Default().
	Logger *slog.Logger
}

// DefaultInputMaxAge is how long input waits for its run in the input
// stream by default: input no orchestrator took in a week is stale, and
// its sender long gone.
const DefaultInputMaxAge = 7 * 24 * time.Hour

// Durable is the JetStream side of an orchestrator's transport: the event
// stream and the durable input consumer. The history is kept by package
// history, on the same JetStream.
type Durable struct {
	js  jetstream.JetStream
	cfg DurableConfig
}

// JetStream returns the JetStream context, for the stores built on it.
func (d *Durable) JetStream() jetstream.JetStream { return d.js }

// Config returns the configuration, defaults filled in.
func (d *Durable) Config() DurableConfig { return d.cfg }

// ErrNoJetStream is returned by OpenDurable when the server has no JetStream.
var ErrNoJetStream = errors.New("the NATS server has no JetStream")

// HasJetStream reports whether nc's server (and account) has JetStream,
// asking again a server that advertises it and has not answered yet
// (probeJetStream).
func HasJetStream(ctx context.Context, nc *nats.Conn) bool {
	js, err := jetstream.New(nc)
	if err != nil {
		return false
	}
	return probeJetStream(ctx, nc, js) == nil
}

// OpenDurable checks that nc's server has JetStream (ErrNoJetStream when it
// has none; a server that advertises it is asked again until it answers,
// within bus.RetryJS's bounds) and creates the event
// stream. Config then says the event stream's storage and size as the
// stream has them. With the events in memory, the event stream is created
// again whenever nc reconnects, since a server that restarts forgets a
// memory stream (one in a cluster keeps it).
func OpenDurable(ctx context.Context, nc *nats.Conn, subjects bus.Subjects, cfg DurableConfig) (*Durable, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if err := probeJetStream(ctx, nc, js); err != nil {
		return nil, err
	}
	if cfg, err = SetupEventStream(ctx, js, subjects, cfg); err != nil {
		return nil, err
	}
	d := &Durable{js: js, cfg: cfg}
	if cfg.EventsStorage == EventsMemory {
		d.recreateEventsOnReconnect(nc, subjects)
	}
	return d, nil
}

// Input returns a durable input for in's handler.
func (d *Durable) Input(ctx context.Context, in *Input) (*DurableInput, error) {
	return NewDurableInput(ctx, d.js, in, d.cfg)
}

func (c *DurableConfig) defaults() {
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if c.DuplicateWindow <= 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.EventsMaxAge <= 0 {
		c.EventsMaxAge = 24 * time.Hour
	}
	if c.EventsStorage == "" {
		c.EventsStorage = EventsMemory
	}
	if c.EventsMaxBytes <= 0 {
		c.EventsMaxBytes = DefaultEventsMaxBytes(c.EventsStorage)
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.InputMaxAge == 0 {
		c.InputMaxAge = DefaultInputMaxAge
	}
	if c.PinnedTTL <= 0 {
		c.PinnedTTL = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// DurableInput consumes the input stream: in and steer as clients publish
// them, and the asks and aborts that orchestrators relay. The stream stores
// each message under its session's partition (a subject transform), and
// each partition has a durable consumer of its own, consumed by the
// orchestrator that owns the partition. A message is acknowledged only when
// Ack says its run ended and is stored, under an ownership fence that still
// holds, and is delivered again otherwise.
type DurableInput struct {
	in     *Input // parsing, handler, rejection
	js     jetstream.JetStream
	stream jetstream.Stream
	cfg    DurableConfig
	log    *slog.Logger
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once // Stop

	mu       sync.Mutex
	owners   ownership.Checker                // judges the fences of acks
	serving  map[int]jetstream.ConsumeContext // by partition
	active   map[uint64]jetstream.Msg         // stream sequence → its latest delivery
	failures map[uint64]int                   // failed handlings per stream sequence
}

// ownerGroup is the priority group of every partition consumer: the server
// delivers a partition's input to one pinned client, and a new owner unpins
// the old one, so that a deposed owner's pulls get nothing more.
const ownerGroup = "owner"

// NewDurableInput creates (or updates) the input stream; Serve begins
// consuming a partition. in supplies the handler, the publisher for error
// events and the logger.
func NewDurableInput(ctx context.Context, js jetstream.JetStream, in *Input, cfg DurableConfig) (*DurableInput, error) {
	cfg.defaults()
	subjects := in.subjects
	name := subjects.StreamName("INPUT")
	if err := SetupApproveStream(ctx, js, subjects, cfg); err != nil {
		return nil, err
	}
	src, dest := subjects.InputTransform()
	sc := jetstream.StreamConfig{
		Name: name, Description: "agentfleet input (in, steer, relayed ask and abort, approval decisions), by session partition",
		Subjects:         []string{subjects.ClientWildcard(bus.KindIn), subjects.ClientWildcard(bus.KindSteer), subjects.ClientWildcard(bus.KindRelay)},
		SubjectTransform: &jetstream.SubjectTransformConfig{Source: src, Destination: dest},
		Retention:        jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		Duplicates: cfg.DuplicateWindow, Replicas: cfg.Replicas, AllowDirect: true,
		Sources: []*jetstream.StreamSource{ApproveSource(subjects)},
		MaxAge:  max(cfg.InputMaxAge, 0), MaxBytes: cfg.InputMaxBytes, Discard: jetstream.DiscardNew,
	}
	stream, err := bus.EnsureStream(ctx, js, sc)
	if err != nil {
		return nil, fmt.Errorf("input stream %s: %w", name, err)
	}
	d := &DurableInput{in: in, js: js, stream: stream, cfg: cfg, log: in.log,
		serving: map[int]jetstream.ConsumeContext{}, active: map[uint64]jetstream.Msg{}, failures: map[uint64]int{}}
	if err := d.migrate(ctx); err != nil {
		return nil, err
	}
	d.stop, d.done = make(chan struct{}), make(chan struct{})
	d.restoreOnReconnect(js.Conn())
	go d.keepAlive()
	return d, nil
}

// Fenced sets the Checker that judges the fence of every Ack. Until it is
// set, every Ack is refused.
func (d *DurableInput) Fenced(by ownership.Checker) {
	d.mu.Lock()
	d.owners = by
	d.mu.Unlock()
}

func consumerName(p int) string { return "partition-" + strconv.Itoa(p) }

// Unserve stops consuming partition p. Its messages being handled stay
// unacknowledged until their Done, or are delivered again after AckWait.
func (d *DurableInput) Unserve(p int) {
	d.mu.Lock()
	cc := d.serving[p]
	delete(d.serving, p)
	d.mu.Unlock()
	if cc != nil {
		cc.Stop()
		<-cc.Closed()
	}
}

// Abandon stops consuming every partition at once, as an orchestrator that
// lost its lease must: nothing more is signalled in progress, so that the
// server delivers what was taken here to the next owners after AckWait.
func (d *DurableInput) Abandon() {
	d.mu.Lock()
	ccs := slices.Collect(maps.Values(d.serving))
	d.serving = map[int]jetstream.ConsumeContext{}
	// Their handlers are gone with the sessions: should this orchestrator
	// serve the partitions again, their deliveries must not be kept alive.
	d.active = map[uint64]jetstream.Msg{}
	d.mu.Unlock()
	for _, cc := range ccs {
		cc.Stop()
	}
}

// partitionOf returns the partition of a delivered message, from its stored
// subject; -1 if it has none.
func (d *DurableInput) partitionOf(m jetstream.Msg) int {
	_, agent, session, err := d.in.subjects.ParseStored(m.Subject())
	if err != nil {
		return -1
	}
	return bus.Partition(agent, session)
}

// Stop stops consuming every partition and the in-progress signals.
func (d *DurableInput) Stop() {
	d.mu.Lock()
	ps := make([]int, 0, len(d.serving))
	for p := range d.serving {
		ps = append(ps, p)
	}
	d.mu.Unlock()
	for _, p := range ps {
		d.Unserve(p)
	}
	d.once.Do(func() {
		close(d.stop)
		<-d.done
	})
}

// Active returns the number of messages delivered and not yet settled.
func (d *DurableInput) Active() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.active)
}

// Sessions returns the agent and session of every session of partition p
// that has input in the stream (delivered and not settled, or not delivered
// yet), so that its new owner loads them, and resumes their interrupted
// runs, without waiting for redeliveries.
func (d *DurableInput) Sessions(ctx context.Context, p int) ([][2]string, error) {
	info, err := d.stream.Info(ctx, jetstream.WithSubjectFilter(d.in.subjects.StoredPartition(p)))
	if err != nil {
		return nil, fmt.Errorf("input stream: %w", err)
	}
	seen := map[[2]string]bool{}
	var out [][2]string
	for subject := range info.State.Subjects {
		_, agent, session, err := d.in.subjects.ParseStored(subject)
		if err != nil {
			continue
		}
		k := [2]string{agent, session}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, nil
}

// Pending returns the session's input in the stream, in stream order, as
// Inbounds with no way to settle them (the consumer's deliveries of the same
// messages do that); a relayed ask keeps its reply, so that it is answered
// even if its delivery went to an owner that died. Aborts, and messages
// that do not parse, are left out: their deliveries settle them.
func (d *DurableInput) Pending(ctx context.Context, agent, session string) ([]*Inbound, error) {
	return d.PendingBefore(ctx, agent, session, 0)
}

// PendingBefore is Pending up to, not including, stream sequence before (0:
// all). A session loaded for a first delivery of sequence S needs only the
// input before S: the consumer delivers in stream order, so nothing after S
// has been delivered to anyone yet, and the consumer brings it here; what
// came before S may be a dead owner's delivery, waiting for its ack time,
// and is read. The lookup for the message after the last is spared.
func (d *DurableInput) PendingBefore(ctx context.Context, agent, session string, before uint64) ([]*Inbound, error) {
	subject := d.in.subjects.StoredSession(agent, session)
	var out []*Inbound
	for seq := uint64(1); before == 0 || seq < before; {
		m, err := d.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("input of session %s: %w", session, err)
		}
		if m.Sequence < seq {
			return nil, fmt.Errorf("input of session %s: the stream answered sequence %d for the next message from %d", session, m.Sequence, seq)
		}
		seq = m.Sequence + 1
		if before != 0 && m.Sequence >= before {
			return out, nil
		}
		in, err := d.in.parseStored(&nats.Msg{Subject: m.Subject, Data: m.Data, Header: m.Header})
		if err != nil || in.Message == nil {
			continue
		}
		in.Seq = m.Sequence
		durableID(in)
		out = append(out, in)
	}
	return out, nil
}

// durableID gives a durable message without an id the id of its stream
// sequence, so that a redelivery is recognised in the stored history.
func durableID(in *Inbound) {
	if in.Message != nil && in.Message.ID == "" {
		in.Message.ID = "js-" + strconv.FormatUint(in.Seq, 10)
	}
	if in.Decision != nil && in.Decision.ID == "" {
		in.Decision.ID = "js-" + strconv.FormatUint(in.Seq, 10)
	}
}

func (d *DurableInput) keepAlive() {
	defer close(d.done)
	t := time.NewTicker(d.cfg.AckWait / 3)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		d.mu.Lock()
		msgs := make([]jetstream.Msg, 0, len(d.active))
		for _, m := range d.active {
			// Only the partitions served here: a partition given up
			// leaves its messages to the server's redelivery.
			if _, ok := d.serving[d.partitionOf(m)]; ok {
				msgs = append(msgs, m)
			}
		}
		d.mu.Unlock()
		for _, m := range msgs {
			// One settled since the snapshot needs no more time: jetstream
			// refuses its in-progress locally (ErrMsgAlreadyAckd).
			if err := m.InProgress(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
				d.log.Warn("input in-progress", "subject", m.Subject(), "err", err)
			}
		}
	}
}

// redelivery is the backoff of a message whose handling failed: the wait
// before it is delivered again after failure n is exponential from a
// quarter of a second to 30s, with equal jitter.
var redelivery = retry.Policy{Base: 250 * time.Millisecond, Max: 30 * time.Second, Jitter: retry.EqualJitter}

func (d *DurableInput) receive(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		d.log.Warn("input without metadata", "subject", m.Subject(), "err", err)
		m.Term()
		return
	}
	nm := &nats.Msg{Subject: m.Subject(), Data: m.Data(), Header: m.Headers()}
	seq := meta.Sequence.Stream
	msg, err := d.in.parseStored(nm)
	if err != nil {
		d.in.reject(nm, msg, err)
		m.Term()
		return
	}
	msg.Delivery, msg.Seq = meta.NumDelivered, seq
	msg.First = storedFirst(nm.Header, d.in.subjects.StoredSession(msg.Agent, msg.Session))
	durableID(msg)
	d.mu.Lock()
	d.active[seq] = m // a redelivery replaces the delivery it follows
	d.mu.Unlock()
	msg.dl = &delivery{d: d, seq: seq, m: m, nm: nm}
	if err := d.in.handler.HandleInput(msg); err != nil {
		if errors.Is(err, bus.ErrTemporary) {
			msg.Retry(err)
		} else {
			msg.Reject(err)
		}
		return
	}
	if msg.Kind == bus.KindAbort {
		// An abort acts on the run active now, or on none, and stores
		// nothing: it is never delivered again, where it could abort a
		// later run, whoever owns its session by then.
		d.settle(seq, m, true)
	}
}

// delivery is one delivery of a stored message: what settles its Inbound
// (Ack, Nak, Retry, Reject), one value for the four.
type delivery struct {
	d   *DurableInput
	seq uint64
	m   jetstream.Msg
	nm  *nats.Msg // the message as parsed
}

func (dl *delivery) retry(msg *Inbound, err error) { dl.d.retry(dl.nm, msg, dl.seq, dl.m, err) }

func (dl *delivery) reject(msg *Inbound, err error) {
	if dl.d.forget(dl.seq, dl.m) {
		dl.d.in.reject(dl.nm, msg, err)
		dl.m.Term()
	}
}

// forget removes delivery m of seq from the active set; false means a later
// delivery (or settlement) took its place.
func (d *DurableInput) forget(seq uint64, m jetstream.Msg) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.active[seq] != m {
		return false
	}
	delete(d.active, seq)
	return true
}

// ack acknowledges delivery m of seq under fence f, if f is of the
// message's partition and holds; otherwise the delivery is dropped here
// (not signalled in progress any more), so that the server delivers it
// again, after AckWait, to the partition's owner then.
func (d *DurableInput) ack(seq uint64, m jetstream.Msg, f ownership.Fence) error {
	d.mu.Lock()
	by := d.owners
	d.mu.Unlock()
	var err error
	switch p := d.partitionOf(m); {
	case by == nil:
		err = fmt.Errorf("no ownership checker to judge the fence")
	case f.Partition != p:
		err = fmt.Errorf("the fence is of partition %d, the message of partition %d", f.Partition, p)
	default:
		err = by.Check(f)
	}
	if err != nil {
		d.forget(seq, m)
		return fmt.Errorf("input: acknowledge message %d on %s: refused under %v: %w", seq, m.Subject(), f, err)
	}
	d.settle(seq, m, true)
	return nil
}

// settle acknowledges the message (ok) or asks for it to be delivered again
// at once (a handover; not a failure). Only the latest delivery of a message
// settles it.
func (d *DurableInput) settle(seq uint64, m jetstream.Msg, ok bool) {
	if !d.forget(seq, m) {
		return
	}
	var err error
	if ok {
		d.mu.Lock()
		delete(d.failures, seq)
		d.mu.Unlock()
		err = m.Ack()
	} else {
		err = m.Nak()
	}
	if err != nil {
		d.log.Warn("settle input", "subject", m.Subject(), "ack", ok, "err", err)
	}
}

// retry counts a failed handling and has the message delivered again after
// a backoff, or terminates it once it failed MaxDeliver times.
func (d *DurableInput) retry(nm *nats.Msg, msg *Inbound, seq uint64, m jetstream.Msg, cause error) {
	if !d.forget(seq, m) {
		return
	}
	d.mu.Lock()
	d.failures[seq]++
	n := d.failures[seq]
	if n >= d.cfg.MaxDeliver {
		delete(d.failures, seq)
	}
	d.mu.Unlock()
	if n >= d.cfg.MaxDeliver {
		d.in.reject(nm, msg, fmt.Errorf("input message %d of stream %s failed %d times and is dropped; last error: %w", seq, d.in.subjects.StreamName("INPUT"), n, cause))
		m.TermWithReason("max failures")
		return
	}
	delay := redelivery.Delay(n)
	d.log.Warn("input will be tried again", "subject", nm.Subject, "seq", seq, "failures", n, "delay", delay, "err", cause)
	if d.in.OnInput != nil {
		d.in.OnInput("retried")
	}
	if err := m.NakWithDelay(delay); err != nil {
		d.log.Warn("settle input", "subject", nm.Subject, "err", err)
	}
}
