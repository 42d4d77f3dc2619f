package main

// This file holds all of agentctl's direct use of nats.go: publishing with
// a check that someone listens, requests, subscriptions, and turning the
// server's permission violations into errors that say what the user may not
// do. It is shaped so that it can move into internal/bus as the client side
// of the public subjects.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// flushTimeout bounds a round trip to the server.
const flushTimeout = 5 * time.Second

// connect dials NATS with the flags' options and routes the server's
// permission violations to m.denied.
func (m *Main) connect() error {
	nc, err := bus.Connect(m.NATS.Config("agentctl", m.logger))
	if err != nil {
		return fmt.Errorf("%w (is the orchestrator or a NATS server running there? see --nats-url)", err)
	}
	m.nc = nc
	m.denied = make(chan error, 16)
	log := m.logger
	nc.SetErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			select {
			case m.denied <- m.deniedError(err):
			default:
			}
			return
		}
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		log.Warn("NATS async error", "subject", subject, "err", err)
	})
	return nil
}

// deniedError rewrites a permission violation so that it names the user
// and points at the roles.
func (m *Main) deniedError(err error) error {
	who := "this NATS user"
	if m.NATS.User != "" {
		who = fmt.Sprintf("NATS user %q", m.NATS.User)
	}
	return fmt.Errorf("%s lacks the permission: %w (see deploy/nats/README.md for what each role may do)", who, err)
}

// checkDenied makes a round trip to the server and reports a permission
// violation on one of subjects. The server answers in order, so a violation
// caused by what was sent before is known when the round trip ends.
func (m *Main) checkDenied(subjects ...string) error {
	if err := m.nc.FlushTimeout(flushTimeout); err != nil {
		return fmt.Errorf("NATS: %w", err)
	}
	err := m.nc.LastError()
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	for _, s := range subjects {
		if strings.Contains(err.Error(), `"`+s+`"`) {
			return m.deniedError(err)
		}
	}
	return nil
}

// errNoListener says that nobody subscribes to a subject.
func errNoListener(subject string) error {
	return fmt.Errorf("nobody listens on %s: is the orchestrator running, on this NATS server (--nats-url) and with this --prefix?", subject)
}

func isNoResponders(msg *nats.Msg) bool {
	return len(msg.Data) == 0 && msg.Header.Get("Status") == "503"
}

// message returns a message on subject; a msgID becomes its Nats-Msg-Id
// header, which JetStream de-duplicates on.
func message(subject, reply string, data []byte, msgID string) *nats.Msg {
	msg := nats.NewMsg(subject)
	msg.Reply, msg.Data = reply, data
	if msgID != "" {
		msg.Header.Set(nats.MsgIdHdr, msgID)
	}
	return msg
}

// publish sends data on subject and fails when the server refuses it or
// when nobody listens: the message goes out with a reply inbox, so that the
// server answers "no responders" at once if no one subscribes. (A JetStream
// stream that stores the subject answers with its acknowledgement, later.)
func (m *Main) publish(subject string, data []byte, msgID string) error {
	inbox := m.nc.NewRespInbox()
	sub, err := m.nc.SubscribeSync(inbox)
	if err != nil {
		return fmt.Errorf("NATS: %w", err)
	}
	defer sub.Unsubscribe()
	if err := m.nc.PublishMsg(message(subject, inbox, data, msgID)); err != nil {
		return fmt.Errorf("publish on %s: %w", subject, err)
	}
	if err := m.checkDenied(subject, inbox); err != nil {
		return err
	}
	// A no-responders status is delivered before the round trip's answer,
	// so it is pending now if it came at all.
	if n, _, _ := sub.Pending(); n > 0 {
		if _, err := sub.NextMsg(flushTimeout); errors.Is(err, nats.ErrNoResponders) {
			return errNoListener(subject)
		}
	}
	return nil
}

// replies is a subscription whose messages arrive on a channel, so that a
// command can wait on it beside other things.
type replies struct {
	sub *nats.Subscription
	C   chan *nats.Msg
}

// subscribe subscribes subject onto a channel and fails when the server
// refuses the subscription.
func (m *Main) subscribe(subject string) (*replies, error) {
	r := &replies{C: make(chan *nats.Msg, 4096)}
	var err error
	if r.sub, err = m.nc.ChanSubscribe(subject, r.C); err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	if err := m.checkDenied(subject); err != nil {
		r.sub.Unsubscribe()
		return nil, err
	}
	return r, nil
}

func (r *replies) Close() { r.sub.Unsubscribe() }

// publishRequest sends data on subject with reply as its reply subject and
// fails when the server refuses it.
func (m *Main) publishRequest(subject, reply string, data []byte, msgID string) error {
	if err := m.nc.PublishMsg(message(subject, reply, data, msgID)); err != nil {
		return fmt.Errorf("publish on %s: %w", subject, err)
	}
	return m.checkDenied(subject)
}

// errInterrupted is what request returns when ctx ends before the answer.
var errInterrupted = errors.New("interrupted")

// request sends data on subject and returns the first answer within
// timeout. It fails when nobody listens, when the server refuses it, and
// when no answer comes in time; it returns errInterrupted when ctx ends.
func (m *Main) request(ctx context.Context, subject string, data []byte, timeout time.Duration) ([]byte, error) {
	inbox := m.nc.NewRespInbox()
	r, err := m.subscribe(inbox)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := m.publishRequest(subject, inbox, data, ""); err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case msg := <-r.C:
		if isNoResponders(msg) {
			return nil, errNoListener(subject)
		}
		return msg.Data, nil
	case err := <-m.denied:
		return nil, err
	case <-t.C:
		return nil, fmt.Errorf("no answer on %s within %v (see --timeout)", subject, timeout)
	case <-ctx.Done():
		return nil, errInterrupted
	}
}

// untilDenied returns a context that also ends when the server reports a
// permission violation, with the violation as its cause: a refused
// JetStream request would otherwise look like a server that never answered.
func (m *Main) untilDenied(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case err := <-m.denied:
			cancel(err)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// openScripts binds the KV bucket of the scripted tools. Unlike
// scriptfleet.NewStore alone, it does not create a missing bucket: the
// orchestrator and the workers that serve scripts create it with the
// replicas of their configuration, which agentctl does not know.
func (m *Main) openScripts(ctx context.Context) (*scriptfleet.Store, error) {
	js, err := jetstream.New(m.nc)
	if err != nil {
		return nil, fmt.Errorf("JetStream: %w", err)
	}
	bucket := scriptfleet.DefaultBucket
	_, err = js.KeyValue(ctx, bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return nil, fmt.Errorf("no scripted tools are stored on this NATS server: the KV bucket %s does not exist (the orchestrator, with JetStream, and every toolworker --scripts create it when they start)", bucket)
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("JetStream is not enabled on this NATS server (for this user's account), so it stores no scripted tools")
	case err != nil:
		return nil, fmt.Errorf("KV bucket %s: %w", bucket, err)
	}
	return scriptfleet.NewStore(ctx, m.nc, scriptfleet.StoreConfig{Bucket: bucket})
}

// replay prints the events on subject kept in the fleet's event stream from
// --since ago, then goes on with new ones as the stream stores them, until
// ctx ends. The feed's ordered consumer keeps them in order and without
// gaps.
func (m *Main) replay(ctx context.Context, subject string) error {
	ctx, cancel := m.untilDenied(ctx)
	defer cancel()
	feed := events.OpenEventFeed(ctx, m.nc, m.subjects)
	denied := func() error {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return nil
	}
	if !feed.Retained() {
		if err := denied(); err != nil {
			return err
		}
		return fmt.Errorf("the event stream %s is not there (the orchestrator keeps it when its NATS has JetStream)", feed.Stream())
	}
	start := time.Now().Add(-m.Since)
	fmt.Fprintf(m.Stderr, "replaying %s from %s, then following (Ctrl-C to stop)\n", subject, start.Local().Format("15:04:05"))
	err := feed.Replay(ctx, subject, events.ReplayFrom{Since: start}, 0, func(e events.FeedEvent) {
		m.printEvent(e.Subject, e.Data)
	})
	if derr := denied(); derr != nil {
		return derr
	}
	return err
}
