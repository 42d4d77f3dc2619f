// Package guarded answers requests on a subscription within two bounds:
// only a reply subject that the fleet's bus.ReplyGuard allows is answered
// (a request without one, or with another, is dropped with a log line and
// does nothing), and at most a number of requests run at once, each in a
// goroutine of its own; past that, a request is answered at once with a
// busy answer. Its concern is that runner, shared by the servers of the
// fork and delete subjects; it imports the NATS client and internal/bus.
package guarded

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
)

// Config configures Handler. Conn, Answer and Busy are required.
type Config struct {
	Conn    *bus.Conn
	Replies bus.ReplyGuard
	Logger  *slog.Logger
	// What names the requests in log lines and in the busy answer:
	// "fork", "delete".
	What string
	// MaxInFlight bounds the requests answered at once; default 1.
	MaxInFlight int
	// Answer runs one request and returns its answer, sent as JSON.
	Answer func(*nats.Msg) any
	// Busy returns the answer to a request past MaxInFlight, given the
	// error text "busy: N <what>s in flight, try again".
	Busy func(text string) any
}

// Handler returns the message handler of c's subject.
func Handler(c Config) nats.MsgHandler {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	slots := make(chan struct{}, max(c.MaxInFlight, 1))
	return func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		if err := c.Replies.Check(m.Reply); err != nil {
			c.Logger.Warn(c.What+" request not answered", "subject", m.Subject, "err", err)
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			c.reply(m, c.Busy(fmt.Sprintf("busy: %d %ss in flight, try again", cap(slots), c.What)))
			return
		}
		go func() {
			defer func() { <-slots }()
			c.reply(m, c.Answer(m))
		}()
	}
}

func (c Config) reply(m *nats.Msg, rep any) {
	b, err := json.Marshal(rep)
	if err != nil {
		c.Logger.Error(c.What+" reply not encoded", "subject", m.Subject, "err", err)
		return
	}
	if err := c.Conn.Publish(m.Reply, b); err != nil {
		c.Logger.Warn(c.What+" reply", "subject", m.Subject, "err", err)
	}
}
