package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
)

// SessionClient sends what a client may send to a session, on the public
// subjects, as agentctl and nats-cli do: a message on
// <prefix>.in.<agent>.<session>, an abort on <prefix>.abort.<agent>.<session>,
// a decision on <prefix>.approve.<agent>.<session>.
type SessionClient struct {
	nc       *nats.Conn
	subjects bus.Subjects
}

// NewSessionClient returns a client of the sessions of subjects on nc.
func NewSessionClient(nc *nats.Conn, subjects bus.Subjects) *SessionClient {
	return &SessionClient{nc: nc, subjects: subjects}
}

// ErrDenied is returned when the server refuses to let the connection
// publish on a client subject.
var ErrDenied = errors.New("this NATS user may not publish there")

// CanAct reports whether the server lets the connection publish messages
// and aborts. It probes <prefix>.in.<one token> and <prefix>.abort.<one
// token>: subjects under the same permissions as a session's
// (<prefix>.in.> in deploy/nats/nats.conf) that no orchestrator subscribes
// and no stream stores, so the probe reaches no agent.
func (c *SessionClient) CanAct() (bool, error) {
	for _, kind := range []string{bus.KindIn, bus.KindAbort} {
		ok, err := bus.CanPublish(c.nc, c.subjects.Prefix+"."+kind+"._permission_probe")
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// Send publishes a user message (the JSON of the in subject, see
// docs/PROTOCOL.md) on the session's in subject, and makes a round trip so
// that a permission violation is an error (ErrDenied).
func (c *SessionClient) Send(agent, session string, msg []byte) error {
	subject := c.subjects.Client(bus.KindIn, agent, session)
	if err := c.nc.Publish(subject, msg); err != nil {
		return fmt.Errorf("publish on %s: %w", subject, err)
	}
	return c.checkDenied(subject)
}

func (c *SessionClient) checkDenied(subject string) error {
	if err := c.nc.FlushTimeout(bus.FlushWait); err != nil {
		return fmt.Errorf("NATS: %w", err)
	}
	if err := c.nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) && bus.ContainsQuoted(err.Error(), subject) {
		return fmt.Errorf("publish on %s: %w", subject, ErrDenied)
	}
	return nil
}

// Abort asks the orchestrator to abort the session's active run, with
// reason, and returns its answer: an assistant message with stop_reason
// aborted, or error with why not in error_message (no active run). It
// fails when nobody answers within ctx, nobody listens, or the server
// refuses (ErrDenied).
func (c *SessionClient) Abort(ctx context.Context, agent, session, reason string) (*agentfleet.AssistantMessage, error) {
	subject := c.subjects.Client(bus.KindAbort, agent, session)
	body, err := json.Marshal(map[string]string{"reason": reason})
	if err != nil {
		return nil, err
	}
	reply, err := c.nc.RequestWithContext(ctx, subject, body)
	if err != nil {
		if derr := c.checkDenied(subject); derr != nil {
			return nil, derr
		}
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("nobody listens on %s: is an orchestrator running with this prefix?", subject)
		}
		return nil, fmt.Errorf("abort on %s: %w", subject, err)
	}
	var m agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &m); err != nil {
		return nil, fmt.Errorf("the answer on %s is not an assistant message: %w", subject, err)
	}
	return &m, nil
}

// Decide publishes a decision on a call that waits for approval (the JSON
// of the approve subject, see docs/PROTOCOL.md) as a request, and returns
// the orchestrator's reply: OK, or why the decision was not taken. It
// fails when nobody answers within ctx, nobody listens, or the server
// refuses (ErrDenied).
func (c *SessionClient) Decide(ctx context.Context, agent, session string, decision []byte) (*agentfleet.ApprovalReply, error) {
	subject := c.subjects.Approve(agent, session)
	reply, err := c.nc.RequestWithContext(ctx, subject, decision)
	if err != nil {
		if derr := c.checkDenied(subject); derr != nil {
			return nil, derr
		}
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("nobody listens on %s: is an orchestrator running with this prefix?", subject)
		}
		return nil, fmt.Errorf("decision on %s: %w", subject, err)
	}
	var r agentfleet.ApprovalReply
	if err := json.Unmarshal(reply.Data, &r); err != nil {
		return nil, fmt.Errorf("the answer on %s is not a decision reply: %w", subject, err)
	}
	return &r, nil
}
