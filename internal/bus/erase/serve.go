package erase

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/guarded"
	"github.com/nats-io/nats.go"
)

// QueueGroup is the queue group of the orchestrators on the delete
// subject (the one of their input, input.QueueInput), so that one of them
// answers each request.
const QueueGroup = "agentfleet-orchestrator"

// Config configures Serve. Subjects and Deleter are required.
type Config struct {
	Subjects bus.Subjects
	Deleter  *Deleter
	// Agent returns nil for an agent the fleet serves, else why not; nil
	// accepts every agent.
	Agent func(name string) error
	// Self names this orchestrator in its answers to the stop subject.
	Self string
	// Stop stops the session if this process holds it: the session's run
	// stops without ending, nothing more of it is stored or published,
	// and it leaves memory; held says it was there, runs names the runs
	// that had not ended. It returns once the run stopped, or with an
	// error when it could not within ctx. Nil: the stop subject is not
	// served.
	Stop func(ctx context.Context, agent, session string) (held bool, runs []string, err error)
	// Tombstones, with Stop, remember the sessions stopped for a delete
	// and the input they stored before it, which the orchestrator then
	// refuses (Tombstones.Refuses).
	Tombstones *Tombstones
	// Replies decides which reply subjects are answered (default the zero
	// bus.ReplyGuard); a request whose reply it refuses is dropped with a
	// log line and deletes nothing.
	Replies bus.ReplyGuard
	// Timeout bounds one delete, and one stop; default 30s.
	Timeout time.Duration
	// MaxInFlight bounds the deletes (and, apart, the stops) run at once;
	// a request past it is answered at once with a busy error. Default 2.
	MaxInFlight int
	Logger      *slog.Logger
}

// Server answers delete requests, and stops, until Close.
type Server struct{ subs []*nats.Subscription }

// Close stops answering; deletes in flight go on until the ctx given to
// Serve ends.
func (s *Server) Close() error {
	var errs []error
	for _, sub := range s.subs {
		errs = append(errs, sub.Unsubscribe())
	}
	return errors.Join(errs...)
}

// Serve answers delete requests on Wildcard in the orchestrators' queue
// group, and, with cfg.Stop, every stop on StopWildcard, until Close; ctx
// bounds the work in flight. It returns once the server holds its
// subscriptions.
func Serve(ctx context.Context, nc *bus.Conn, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 2
	}
	srv := &Server{}
	sub, err := nc.QueueSubscribe(Wildcard(cfg.Subjects), QueueGroup, guarded.Handler(guarded.Config{
		Conn: nc, Replies: cfg.Replies, Logger: cfg.Logger, What: "delete", MaxInFlight: cfg.MaxInFlight,
		Busy: func(text string) any { return &Reply{Error: text} },
		Answer: func(m *nats.Msg) any {
			d, err := handle(ctx, cfg, m)
			if err != nil {
				cfg.Logger.Warn("delete refused", "subject", m.Subject, "err", err)
				return &Reply{Error: err.Error()}
			}
			cfg.Logger.Info("session deleted", "agent", d.Agent, "session", d.Session, "messages", d.Messages, "objects", d.Objects, "stopped", d.Stopped)
			return &Reply{Deleted: d}
		},
	}))
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", Wildcard(cfg.Subjects), err)
	}
	srv.subs = append(srv.subs, sub)
	if cfg.Stop != nil {
		sub, err := nc.Subscribe(StopWildcard(cfg.Subjects), guarded.Handler(guarded.Config{
			Conn: nc, Replies: cfg.Replies, Logger: cfg.Logger, What: "stop", MaxInFlight: cfg.MaxInFlight,
			Busy:   func(text string) any { return &StopReply{Orchestrator: cfg.Self, Error: text} },
			Answer: func(m *nats.Msg) any { return stop(ctx, nc, cfg, m) },
		}))
		if err != nil {
			srv.Close()
			return nil, fmt.Errorf("subscribe %s: %w", StopWildcard(cfg.Subjects), err)
		}
		srv.subs = append(srv.subs, sub)
	}
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		srv.Close()
		return nil, fmt.Errorf("subscribe %s: %w", Wildcard(cfg.Subjects), err)
	}
	return srv, nil
}

// stop answers one stop request: the session is remembered as deleted
// (Tombstones) and stopped if this process holds it; what the stop
// published goes out before the answer does.
func stop(ctx context.Context, nc *bus.Conn, cfg Config, m *nats.Msg) *StopReply {
	rep := &StopReply{Orchestrator: cfg.Self}
	agent, session, err := ParseStop(cfg.Subjects, m.Subject)
	var req StopRequest
	if err == nil {
		req, err = ParseStopRequest(m.Data)
	}
	if err == nil {
		cfg.Tombstones.Add(agent, session, req.InputSeq, time.Now())
		sctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		rep.Held, rep.Runs, err = cfg.Stop(sctx, agent, session)
		cancel()
	}
	if err != nil {
		rep.Error = err.Error()
	}
	nc.FlushTimeout(5 * time.Second)
	return rep
}

func handle(ctx context.Context, cfg Config, m *nats.Msg) (*Deleted, error) {
	agent, session, err := Parse(cfg.Subjects, m.Subject)
	if err != nil {
		return nil, err
	}
	if cfg.Agent != nil {
		if err := cfg.Agent(agent); err != nil {
			return nil, err
		}
	}
	if _, err := ParseRequest(session, m.Data); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	d, err := cfg.Deleter.Delete(ctx, agent, session)
	if d != nil {
		d.By = cfg.Self
	}
	return d, err
}
