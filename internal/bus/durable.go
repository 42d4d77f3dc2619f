package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrDuplicate is returned by an InputHandler for input it has already
// handled; durable input is then acknowledged without an error event.
var ErrDuplicate = errors.New("duplicate message")

// ErrInProgress is returned by an InputHandler for a redelivery of durable
// input (the same stream message) whose first delivery is still being
// handled; the redelivery is dropped, and the first delivery's ack settles
// the message. A different message with the id of one being handled is an
// ErrDuplicate.
var ErrInProgress = errors.New("message already in progress")

// DurableConfig configures the JetStream side of the orchestrator: the
// streams that keep input and events, and the input consumer. The zero value
// means the documented defaults.
type DurableConfig struct {
	// AckWait is how long a delivered input message may go without an ack
	// or an in-progress signal before it is delivered again; default 30s.
	AckWait time.Duration
	// MaxDeliver bounds the deliveries of one input message; the last one
	// that fails is terminated with an error event. Default 5.
	MaxDeliver int
	// DuplicateWindow is how long JetStream remembers Nats-Msg-Id headers to
	// drop duplicates; default 2m.
	DuplicateWindow time.Duration
	// EventsMaxAge and EventsMaxBytes bound the events kept for late
	// observers; default 24h and 1 GiB.
	EventsMaxAge   time.Duration
	EventsMaxBytes int64
	// Replicas of every stream; default 1 (use 3 in a cluster).
	Replicas int
	// HistoryMaxAge bounds how long session histories are kept; default
	// forever.
	HistoryMaxAge time.Duration
}

// Durable is the JetStream side of an orchestrator: the history store, the
// event stream, and the durable input consumer.
type Durable struct {
	js      jetstream.JetStream
	cfg     DurableConfig
	History *HistoryStore
}

// ErrNoJetStream is returned by OpenDurable when the server has no JetStream.
var ErrNoJetStream = errors.New("the NATS server has no JetStream")

// HasJetStream reports whether nc's server (and account) has JetStream.
func HasJetStream(ctx context.Context, nc *nats.Conn) bool {
	js, err := jetstream.New(nc)
	if err != nil {
		return false
	}
	_, err = js.AccountInfo(ctx)
	return err == nil
}

// OpenDurable checks that nc's server has JetStream and creates the history
// and event streams.
func OpenDurable(ctx context.Context, nc *nats.Conn, subjects Subjects, cfg DurableConfig) (*Durable, error) {
	cfg.defaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoJetStream, err)
	}
	h, err := NewHistoryStore(ctx, js, subjects, cfg.HistoryMaxAge, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	if err := SetupEventStream(ctx, js, subjects, cfg); err != nil {
		return nil, err
	}
	return &Durable{js: js, cfg: cfg, History: h}, nil
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
	if c.EventsMaxBytes <= 0 {
		c.EventsMaxBytes = 1 << 30
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
}

// SetupEventStream creates (or updates) the stream that keeps recent events
// for observers that connect late.
func SetupEventStream(ctx context.Context, js jetstream.JetStream, subjects Subjects, cfg DurableConfig) error {
	cfg.defaults()
	name := subjects.StreamName("EVENTS")
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: name, Description: "agentfleet lifecycle events, kept for late observers",
		Subjects: []string{subjects.Events()}, Storage: jetstream.FileStorage,
		MaxAge: cfg.EventsMaxAge, MaxBytes: cfg.EventsMaxBytes, Discard: jetstream.DiscardOld,
		Replicas: cfg.Replicas, AllowDirect: true,
	})
	if err != nil {
		return fmt.Errorf("event stream %s: %w", name, err)
	}
	return nil
}

// DurableInput consumes in and steer messages from a JetStream work-queue
// stream through a durable consumer, so that input survives orchestrator
// restarts: a message is acknowledged only when Done(true) says its run
// ended and is stored, and is delivered again otherwise.
type DurableInput struct {
	in   *Input // parsing, handler, rejection
	js   jetstream.JetStream
	cfg  DurableConfig
	log  *slog.Logger
	cc   jetstream.ConsumeContext
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	active map[jetstream.Msg]struct{}
}

// NewDurableInput creates (or updates) the input stream and its durable
// consumer; Start begins consuming. in supplies the handler, the publisher
// for error events and the logger.
func NewDurableInput(ctx context.Context, js jetstream.JetStream, in *Input, cfg DurableConfig) (*DurableInput, error) {
	cfg.defaults()
	subjects := in.subjects
	name := subjects.StreamName("INPUT")
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: name, Description: "agentfleet user input (in, steer)",
		Subjects:  []string{subjects.Prefix + "." + KindIn + ".>", subjects.Prefix + "." + KindSteer + ".>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		Duplicates: cfg.DuplicateWindow, Replicas: cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("input stream %s: %w", name, err)
	}
	_, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "orchestrator", Description: "agentfleet orchestrators",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: cfg.AckWait,
		// Deliveries are bounded by the orchestrator itself, which says so
		// in an error event; the server's own limit is a backstop.
		MaxDeliver:    cfg.MaxDeliver + 1,
		MaxAckPending: 100_000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("input consumer: %w", err)
	}
	return &DurableInput{in: in, js: js, cfg: cfg, log: in.log, active: map[jetstream.Msg]struct{}{}}, nil
}

// Start begins consuming, and keeps the messages of active runs alive with
// in-progress signals.
func (d *DurableInput) Start(ctx context.Context) error {
	cons, err := d.js.Consumer(ctx, d.in.subjects.StreamName("INPUT"), "orchestrator")
	if err != nil {
		return fmt.Errorf("input consumer: %w", err)
	}
	d.cc, err = cons.Consume(d.receive, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		d.log.Warn("input consumer", "err", err)
	}))
	if err != nil {
		return fmt.Errorf("input consumer: %w", err)
	}
	d.stop, d.done = make(chan struct{}), make(chan struct{})
	go d.keepAlive()
	return nil
}

// Stop stops taking input. Messages being handled stay unacknowledged until
// their Done, or are delivered again after AckWait if it never comes.
func (d *DurableInput) Stop() {
	if d.cc != nil {
		d.cc.Stop()
		<-d.cc.Closed()
	}
	if d.stop != nil {
		close(d.stop)
		<-d.done
		d.stop = nil
	}
}

// Active returns the number of messages delivered and not yet settled.
func (d *DurableInput) Active() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.active)
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
		for m := range d.active {
			msgs = append(msgs, m)
		}
		d.mu.Unlock()
		for _, m := range msgs {
			if err := m.InProgress(); err != nil {
				d.log.Warn("input in-progress", "subject", m.Subject(), "err", err)
			}
		}
	}
}

func (d *DurableInput) receive(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		d.log.Warn("input without metadata", "subject", m.Subject(), "err", err)
		m.Term()
		return
	}
	nm := &nats.Msg{Subject: m.Subject(), Data: m.Data(), Header: m.Headers()}
	if int(meta.NumDelivered) > d.cfg.MaxDeliver {
		msg, _ := d.in.parse(nm) // for the agent and session of the event
		d.in.reject(nm, msg, fmt.Errorf("input message %d of stream %s failed %d deliveries and is dropped", meta.Sequence.Stream, meta.Stream, d.cfg.MaxDeliver))
		m.TermWithReason("max deliveries")
		return
	}
	msg, err := d.in.parse(nm)
	if err == nil {
		msg.Delivery, msg.Seq = meta.NumDelivered, meta.Sequence.Stream
		if msg.Message != nil && msg.Message.ID == "" {
			// Every durable message gets an id, so a redelivery is
			// recognised in the stored history.
			msg.Message.ID = "js-" + strconv.FormatUint(meta.Sequence.Stream, 10)
		}
		d.mu.Lock()
		d.active[m] = struct{}{}
		d.mu.Unlock()
		var once sync.Once
		msg.done = func(ok bool) {
			once.Do(func() {
				d.mu.Lock()
				delete(d.active, m)
				d.mu.Unlock()
				var serr error
				if ok {
					serr = m.Ack()
				} else {
					serr = m.Nak()
				}
				if serr != nil {
					d.log.Warn("settle input", "subject", m.Subject(), "ack", ok, "err", serr)
				}
			})
		}
		err = d.in.handler.HandleInput(msg)
		if errors.Is(err, ErrInProgress) {
			// The same stream message is being handled: the first
			// delivery's ack settles it.
			d.mu.Lock()
			delete(d.active, m)
			d.mu.Unlock()
			if d.in.OnInput != nil {
				d.in.OnInput("duplicate")
			}
			return
		}
		if errors.Is(err, ErrDuplicate) {
			msg.Done(true)
			if d.in.OnInput != nil {
				d.in.OnInput("duplicate")
			}
			return
		}
		if err != nil {
			d.mu.Lock()
			delete(d.active, m)
			d.mu.Unlock()
		}
	}
	if err != nil {
		d.in.reject(nm, msg, err)
		m.Term()
		return
	}
	if d.in.OnInput != nil {
		d.in.OnInput("accepted")
	}
}
