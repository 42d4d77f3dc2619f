package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// FeedEvent is one event as an observer reads it: its subject, its JSON
// body as published, and its sequence in the fleet's event stream (0 when
// it came from a core subscription, without the stream).
type FeedEvent struct {
	Subject string
	Data    []byte
	Seq     uint64
}

// EventFeed reads the events of a fleet for observers (dashboards,
// agentctl tail): the live ones, and, when the server keeps the event
// stream <PREFIX>_EVENTS, the retained ones. It is the read side of
// Publisher.
type EventFeed struct {
	nc       *nats.Conn
	subjects bus.Subjects
	js       jetstream.JetStream
	stream   string
	retained bool
}

// OpenEventFeed returns the feed of nc's fleet. It looks the event stream
// up once: when the stream is missing, or the user may not read it,
// Retained reports false and the feed follows a core subscription, without
// replay. ctx bounds that look-up.
func OpenEventFeed(ctx context.Context, nc *nats.Conn, subjects bus.Subjects) *EventFeed {
	f := &EventFeed{nc: nc, subjects: subjects, stream: subjects.StreamName("EVENTS")}
	js, err := jetstream.New(nc)
	if err != nil {
		return f
	}
	f.js = js
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := js.Stream(ctx, f.stream); err == nil {
		f.retained = true
	}
	return f
}

// Retained reports whether the feed reads the event stream, so that events
// carry stream sequences and Replay works.
func (f *EventFeed) Retained() bool { return f.retained }

// Stream returns the name of the event stream.
func (f *EventFeed) Stream() string { return f.stream }

// Follow calls fn with every event published from now on, in order, until
// stop is called. It returns once the subscription is in place, so that an
// event published after Follow returns reaches fn. With the stream, it
// reads the stream with an ordered consumer from the sequence after its
// last at the call (returned as last), so that events carry Seq without
// gaps; without, it subscribes <prefix>.events.> and last is 0. fn runs on one goroutine at a time and must
// not block.
func (f *EventFeed) Follow(ctx context.Context, fn func(FeedEvent)) (stop func(), last uint64, err error) {
	if !f.retained {
		sub, err := f.nc.Subscribe(f.subjects.Events(), func(m *nats.Msg) {
			fn(FeedEvent{Subject: m.Subject, Data: m.Data})
		})
		if err != nil {
			return nil, 0, fmt.Errorf("subscribe %s: %w", f.subjects.Events(), err)
		}
		sub.SetPendingLimits(-1, 64<<20)
		if err := f.nc.FlushTimeout(bus.FlushWait); err != nil {
			sub.Unsubscribe()
			return nil, 0, fmt.Errorf("subscribe %s: %w", f.subjects.Events(), err)
		}
		return func() { sub.Unsubscribe() }, 0, nil
	}
	s, err := f.js.Stream(ctx, f.stream)
	if err != nil {
		return nil, 0, fmt.Errorf("the event stream %s: %w", f.stream, err)
	}
	last = s.CachedInfo().State.LastSeq
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{f.subjects.Events()},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    last + 1,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("the event stream %s: %w", f.stream, err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			return
		}
		fn(FeedEvent{Subject: m.Subject(), Data: m.Data(), Seq: md.Sequence.Stream})
	})
	if err != nil {
		return nil, 0, fmt.Errorf("the event stream %s: %w", f.stream, err)
	}
	return cc.Stop, last, nil
}

// ReplayFrom says where a replay starts: at a time, or after a stream
// sequence (After wins when set).
type ReplayFrom struct {
	Since time.Time
	After uint64
}

// ErrNotRetained is returned by Replay when the server keeps no event
// stream the feed may read.
var ErrNotRetained = errors.New("the event stream is not available")

// Replay calls fn, in order, with the stored events on filter (a subject
// of <prefix>.events.>; empty means all) from from, up to and including
// the stream sequence upTo, and returns when it passed upTo or read the
// last stored event. upTo 0 means no end: Replay goes on with new events
// as the stream stores them, until ctx ends (then it returns nil). Any
// other end of ctx returns its error.
func (f *EventFeed) Replay(ctx context.Context, filter string, from ReplayFrom, upTo uint64, fn func(FeedEvent)) error {
	if !f.retained {
		return ErrNotRetained
	}
	if filter == "" {
		filter = f.subjects.Events()
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}}
	switch {
	case from.After > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from.After+1
	case !from.Since.IsZero():
		since := from.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	if upTo > 0 && from.After >= upTo {
		return nil
	}
	cons, err := f.js.OrderedConsumer(ctx, f.stream, cfg)
	if err != nil {
		return fmt.Errorf("the event stream %s: %w", f.stream, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("the event stream %s: %w", f.stream, err)
	}
	var once sync.Once
	stop := func() { once.Do(it.Stop) }
	defer stop()
	if upTo > 0 {
		// Nothing stored in the range: Next would wait for the next event.
		if info := cons.CachedInfo(); info != nil && info.NumPending == 0 && info.Delivered.Consumer == 0 {
			return nil
		}
	}
	// Next does not take ctx: stopping the iterator ends its wait.
	defer context.AfterFunc(ctx, stop)()
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				if upTo == 0 && errors.Is(ctx.Err(), context.Canceled) {
					return nil
				}
				return ctx.Err()
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return fmt.Errorf("the event stream %s: %w", f.stream, err)
		}
		md, err := m.Metadata()
		if err != nil {
			continue
		}
		seq := md.Sequence.Stream
		if upTo > 0 && seq > upTo {
			return nil
		}
		fn(FeedEvent{Subject: m.Subject(), Data: m.Data(), Seq: seq})
		if upTo > 0 && (seq == upTo || md.NumPending == 0) {
			return nil
		}
	}
}
