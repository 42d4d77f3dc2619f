// Package services answers the orchestrator's request subjects on NATS:
// the agents' tool lists (Subjects.AgentTools), direct tool calls
// (Subjects.Call, for agentctl mcp) and sessions' stored records
// (Subjects.SessionHistory, for agentctl history). It subscribes, checks each request's
// reply subject with the reply guard, decodes the request, asks an Agents
// (the orchestrator) and encodes and sends the answer.
//
// It imports the NATS client, internal/bus, its client types and history
// store, and the agentfleet root types;
// never the agent core (internal/loop, internal/pipeline) nor the
// orchestrator, which it reaches only through Agents.
package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/nats-io/nats.go"
)

// Agents is what the services answer from; the orchestrator implements it.
type Agents interface {
	// AgentTools returns the definitions of agent's tools, in the order
	// the model sees them, and the names of all agents, sorted. err says
	// why there are none, such as an unknown agent; agents is given then
	// too.
	AgentTools(agent string) (tools []agentfleet.ToolDef, agents []string, err error)
	// CallTool runs one call of agent's tools outside any run, for
	// session. It fails only for an unknown agent or session name;
	// everything else is an outcome.
	CallTool(ctx context.Context, agent, session string, call agentfleet.ToolCall) (*CallOutcome, error)
	// SessionHistory returns a session's stored records. It fails for an
	// unknown agent, and for an orchestrator that stores no history.
	SessionHistory(ctx context.Context, agent, session string) (*history.Loaded, error)
}

// CallOutcome is how a direct call ended: its result, whether that is an
// error result, and the kind of outcome (pipeline's outcome kinds, such as
// "ok" or "blocked").
type CallOutcome struct {
	Result  *agentfleet.ToolResult
	IsError bool
	Kind    string
}

// Config configures the services. Subjects is required; every other
// field is optional and its zero value means the documented default.
type Config struct {
	Subjects bus.Subjects
	// Replies decides which reply subjects are answered; a request whose
	// reply it refuses is dropped with a log line. Default the zero
	// bus.ReplyGuard.
	Replies bus.ReplyGuard
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Services are the subscriptions that answer the request subjects.
type Services struct {
	tools, calls, history *nats.Subscription
}

// Start subscribes the request subjects on nc, in the queue group
// bus.QueueInput: every orchestrator of the prefix knows the same agents
// and fleet, so any of them answers as well as another. ctx is the context
// of the calls it runs: when it ends, the calls in flight are cancelled.
// It returns once the server holds the subscriptions, and fails when a
// subject cannot be subscribed, with nothing left subscribed.
func Start(ctx context.Context, nc *bus.Conn, cfg Config, agents Agents) (*Services, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &answerer{ctx: ctx, nc: nc, cfg: cfg, agents: agents}
	var s Services
	var err error
	if s.tools, err = a.answerTools(); err != nil {
		return nil, err
	}
	if s.calls, err = a.answerCalls(); err != nil {
		return nil, errors.Join(err, s.tools.Unsubscribe())
	}
	if s.history, err = a.answerHistory(); err != nil {
		return nil, errors.Join(err, s.tools.Unsubscribe(), s.calls.Unsubscribe())
	}
	// A round trip, so that the server holds both subscriptions when Start
	// returns: a request sent right after is answered, not refused with
	// "no responders".
	if err = nc.FlushTimeout(5 * time.Second); err != nil {
		return nil, errors.Join(fmt.Errorf("services: %w", err), s.Close())
	}
	return &s, nil
}

// Close unsubscribes the request subjects; calls already running go on
// until the ctx given to Start ends.
func (s *Services) Close() error {
	return errors.Join(s.tools.Unsubscribe(), s.calls.Unsubscribe(), s.history.Unsubscribe())
}

// answerer answers the requests of Start's subscriptions.
type answerer struct {
	ctx    context.Context
	nc     *bus.Conn
	cfg    Config
	agents Agents
}

// mayAnswer reports whether m may be answered on its reply subject (see
// bus.ReplyGuard); a request whose reply is refused is dropped with a log
// line, and nothing is published on that subject.
func (a *answerer) mayAnswer(m *nats.Msg) bool {
	if m.Reply == "" {
		return false
	}
	if err := a.cfg.Replies.Check(m.Reply); err != nil {
		a.cfg.Logger.Warn("request not answered", "subject", m.Subject, "err", err)
		return false
	}
	return true
}

// subscribe queue-subscribes subject in bus.QueueInput with h.
func (a *answerer) subscribe(subject string, h nats.MsgHandler) (*nats.Subscription, error) {
	sub, err := a.nc.QueueSubscribe(subject, input.QueueInput, h)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	return sub, nil
}
