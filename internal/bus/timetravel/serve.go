package timetravel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/guarded"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/nats-io/nats.go"
)

// Subject returns the fork subject of a session: a request there forks it.
func Subject(s bus.Subjects, agent, session string) string {
	return s.Prefix + ".fork." + agent + "." + session
}

// Wildcard matches the fork subject of every agent and session.
func Wildcard(s bus.Subjects) string { return s.Prefix + ".fork.*.*" }

// Parse returns the agent and session of a fork subject.
func Parse(s bus.Subjects, subject string) (agent, session string, err error) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+".fork.")
	agent, session, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return "", "", fmt.Errorf("subject %q: want %s.fork.<agent>.<session>", subject, s.Prefix)
	}
	if err := bus.CheckToken("agent", agent); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	if err := bus.CheckToken("session", session); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	return agent, session, nil
}

// Request is the JSON body of a fork request: the session to create, the
// point to cut at (Point; neither field: the whole history), and the model
// the new session's runs use instead of the agent's (empty: the agent's),
// which the orchestrator accepts only when the agent's profile allows it.
type Request struct {
	NewSession string `json:"new_session"`
	Point
	Model string `json:"model,omitempty"`
}

// MaxModelBytes bounds the model name of a fork request.
const MaxModelBytes = 256

// Reply is the JSON answer to a fork request: what was forked, or why not.
type Reply struct {
	Forked *Forked `json:"forked,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// MaxRequestBytes bounds a fork request; a larger one is refused unread.
const MaxRequestBytes = 4 << 10

// ParseRequest decodes a fork request and checks it; the error says what
// is wrong.
func ParseRequest(data []byte) (*Request, error) {
	if len(data) > MaxRequestBytes {
		return nil, fmt.Errorf("fork request of %d bytes, the limit is %d", len(data), MaxRequestBytes)
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("fork request is not JSON of {new_session, at, before_run, model}: %w", err)
	}
	if err := bus.CheckToken("new session", req.NewSession); err != nil {
		return nil, fmt.Errorf("fork request: %w", err)
	}
	if req.BeforeRun != "" && len(req.BeforeRun) > 256 {
		return nil, fmt.Errorf("fork request: before_run of %d bytes, the limit is 256", len(req.BeforeRun))
	}
	if err := CheckModel(req.Model); err != nil {
		return nil, fmt.Errorf("fork request: %w", err)
	}
	return &req, nil
}

// Config configures Serve. Subjects and Store are required.
type Config struct {
	Subjects bus.Subjects
	Store    *history.Store
	// Agent returns nil for an agent the fleet serves, else why not; nil
	// accepts every agent.
	Agent func(name string) error
	// Model returns nil when a fork of agent's sessions may run on model
	// (never called with an empty model), else why not; nil refuses every
	// fork request that names a model.
	Model func(agent, model string) error
	// Replies decides which reply subjects are answered (default the zero
	// bus.ReplyGuard); a request whose reply it refuses is dropped with a
	// log line.
	Replies bus.ReplyGuard
	// Timeout bounds one fork; default 30s.
	Timeout time.Duration
	// MaxInFlight bounds the forks run at once (each loads a whole
	// history); a request past it is answered at once with a busy error.
	// Default 4.
	MaxInFlight int
	Logger      *slog.Logger
}

// Server answers fork requests until Close.
type Server struct{ sub *nats.Subscription }

// Close stops answering; forks in flight go on until the ctx given to
// Serve ends.
func (s *Server) Close() error { return s.sub.Unsubscribe() }

// Serve answers fork requests on Wildcard in the orchestrators' queue
// group until Close; ctx bounds the forks in flight. It returns once the
// server holds the subscription.
func Serve(ctx context.Context, nc *bus.Conn, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 4
	}
	sub, err := nc.QueueSubscribe(Wildcard(cfg.Subjects), input.QueueInput, guarded.Handler(guarded.Config{
		Conn: nc, Replies: cfg.Replies, Logger: cfg.Logger, What: "fork", MaxInFlight: cfg.MaxInFlight,
		Busy: func(text string) any { return &Reply{Error: text} },
		Answer: func(m *nats.Msg) any {
			rep := &Reply{}
			var err error
			if rep.Forked, err = handle(ctx, cfg, m); err != nil {
				rep.Error = err.Error()
			}
			return rep
		},
	}))
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", Wildcard(cfg.Subjects), err)
	}
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe %s: %w", Wildcard(cfg.Subjects), err)
	}
	return &Server{sub}, nil
}

func handle(ctx context.Context, cfg Config, m *nats.Msg) (*Forked, error) {
	agent, session, err := Parse(cfg.Subjects, m.Subject)
	if err != nil {
		return nil, err
	}
	if cfg.Agent != nil {
		if err := cfg.Agent(agent); err != nil {
			return nil, err
		}
	}
	req, err := ParseRequest(m.Data)
	if err != nil {
		return nil, err
	}
	if req.Model != "" {
		if cfg.Model == nil {
			return nil, fmt.Errorf("fork request: model %q: this orchestrator lets no fork choose its model", req.Model)
		}
		if err := cfg.Model(agent, req.Model); err != nil {
			return nil, fmt.Errorf("fork request: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	return Fork(ctx, cfg.Store, agent, session, *req)
}

// CheckModel checks the shape of a model name given in a fork request:
// empty (the agent's own), or at most MaxModelBytes of printable text
// without white space.
func CheckModel(model string) error {
	if len(model) > MaxModelBytes {
		return fmt.Errorf("model of %d bytes, the limit is %d", len(model), MaxModelBytes)
	}
	for _, r := range model {
		if r <= ' ' || r == 0x7f || !unicode.IsPrint(r) {
			return fmt.Errorf("model %q holds white space or a control character", model)
		}
	}
	return nil
}
