package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
)

// FlushTimeout bounds a round trip to the server.
const FlushTimeout = 5 * time.Second

// ErrInterrupted is what Request returns when its context ends before the
// answer.
var ErrInterrupted = errors.New("interrupted")

// Conn is a client's connection to the fleet's public subjects: it
// publishes with a check that someone listens, sends requests, subscribes
// onto channels, and turns the server's permission violations into errors
// that say what the user may not do.
type Conn struct {
	nc     *bus.Conn
	user   string
	denied chan error
}

// Dial connects with cfg. Permission violations the server reports arrive
// on Denied, rewritten to name cfg.User; other asynchronous errors are
// logged on log.
func Dial(cfg bus.ConnectConfig, log *slog.Logger) (*Conn, error) {
	nc, err := bus.Connect(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w (is the orchestrator or a NATS server running there? see --nats-url)", err)
	}
	c := &Conn{nc: nc, user: cfg.User, denied: make(chan error, 16)}
	nc.SetErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			select {
			case c.denied <- c.deniedError(err):
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
	return c, nil
}

// NATS is the underlying connection, for the packages that take one.
func (c *Conn) NATS() *bus.Conn { return c.nc }

// Denied delivers the permission violations the server reports.
func (c *Conn) Denied() <-chan error { return c.denied }

// NewInbox returns a fresh reply subject under the connection's inbox
// prefix.
func (c *Conn) NewInbox() string { return c.nc.NewRespInbox() }

// Close disconnects.
func (c *Conn) Close() { c.nc.Close() }

// deniedError rewrites a permission violation so that it names the user
// and points at the roles.
func (c *Conn) deniedError(err error) error {
	who := "this NATS user"
	if c.user != "" {
		who = fmt.Sprintf("NATS user %q", c.user)
	}
	return fmt.Errorf("%s lacks the permission: %w (see deploy/nats/README.md for what each role may do)", who, err)
}

// CheckDenied makes a round trip to the server and reports a permission
// violation on one of subjects. The server answers in order, so a violation
// caused by what was sent before is known when the round trip ends.
func (c *Conn) CheckDenied(subjects ...string) error {
	if err := c.nc.FlushTimeout(FlushTimeout); err != nil {
		return fmt.Errorf("NATS: %w", err)
	}
	err := c.nc.LastError()
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	for _, s := range subjects {
		if strings.Contains(err.Error(), `"`+s+`"`) {
			return c.deniedError(err)
		}
	}
	return nil
}

// ErrNoListener says that nobody subscribes to subject.
func ErrNoListener(subject string) error {
	return fmt.Errorf("nobody listens on %s: is the orchestrator running, on this NATS server (--nats-url) and with this --prefix?", subject)
}

// IsNoResponders reports whether msg is the server's "no responders"
// status.
func IsNoResponders(msg *nats.Msg) bool {
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

// Publish sends data on subject and fails when the server refuses it or
// when nobody listens: the message goes out with a reply inbox, so that the
// server answers "no responders" at once if no one subscribes. (A JetStream
// stream that stores the subject answers with its acknowledgement, later.)
func (c *Conn) Publish(subject string, data []byte, msgID string) error {
	inbox := c.nc.NewRespInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return fmt.Errorf("NATS: %w", err)
	}
	defer sub.Unsubscribe()
	if err := c.nc.PublishMsg(message(subject, inbox, data, msgID)); err != nil {
		return fmt.Errorf("publish on %s: %w", subject, err)
	}
	if err := c.CheckDenied(subject, inbox); err != nil {
		return err
	}
	// A no-responders status is delivered before the round trip's answer,
	// so it is pending now if it came at all.
	if n, _, _ := sub.Pending(); n > 0 {
		if _, err := sub.NextMsg(FlushTimeout); errors.Is(err, nats.ErrNoResponders) {
			return ErrNoListener(subject)
		}
	}
	return nil
}

// Replies is a subscription whose messages arrive on a channel, so that a
// command can wait on it beside other things.
type Replies struct {
	sub *nats.Subscription
	C   chan *nats.Msg
}

// Subscribe subscribes subject onto a channel and fails when the server
// refuses the subscription.
func (c *Conn) Subscribe(subject string) (*Replies, error) {
	r := &Replies{C: make(chan *nats.Msg, 4096)}
	var err error
	if r.sub, err = c.nc.ChanSubscribe(subject, r.C); err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	if err := c.CheckDenied(subject); err != nil {
		r.sub.Unsubscribe()
		return nil, err
	}
	return r, nil
}

// Close ends the subscription.
func (r *Replies) Close() { r.sub.Unsubscribe() }

// PublishRequest sends data on subject with reply as its reply subject and
// fails when the server refuses it.
func (c *Conn) PublishRequest(subject, reply string, data []byte, msgID string) error {
	if err := c.nc.PublishMsg(message(subject, reply, data, msgID)); err != nil {
		return fmt.Errorf("publish on %s: %w", subject, err)
	}
	return c.CheckDenied(subject)
}

// Request sends data on subject and returns the first answer within
// timeout. It fails when nobody listens, when the server refuses it, and
// when no answer comes in time; it returns ErrInterrupted when ctx ends.
func (c *Conn) Request(ctx context.Context, subject string, data []byte, timeout time.Duration) ([]byte, error) {
	inbox := c.nc.NewRespInbox()
	r, err := c.Subscribe(inbox)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := c.PublishRequest(subject, inbox, data, ""); err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case msg := <-r.C:
		if IsNoResponders(msg) {
			return nil, ErrNoListener(subject)
		}
		return msg.Data, nil
	case err := <-c.denied:
		return nil, err
	case <-t.C:
		return nil, fmt.Errorf("no answer on %s within %v (see --timeout)", subject, timeout)
	case <-ctx.Done():
		return nil, ErrInterrupted
	}
}

// UntilDenied returns a context that also ends when the server reports a
// permission violation, with the violation as its cause: a refused
// JetStream request would otherwise look like a server that never answered.
func (c *Conn) UntilDenied(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case err := <-c.denied:
			cancel(err)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}
