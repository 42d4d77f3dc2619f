// Package dashboard is the browser dashboard of a fleet: an http.Handler
// that serves an embedded page (plain JavaScript and CSS, no build step),
// the fleet's events as Server-Sent Events, live and replayed from the
// event stream, the fleet's workers as JSON, and the two actions a client
// has, sending a message to a session and aborting its run. It reads and
// writes NATS only through the interfaces below, which internal/bus
// implements.
package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
)

// Feed is where the events come from: bus.EventFeed.
type Feed interface {
	// Retained reports whether events carry stream sequences and Replay
	// works.
	Retained() bool
	// Follow calls fn with every event from now on, in order, until stop;
	// last is the stream sequence before the first event it delivers.
	Follow(ctx context.Context, fn func(events.FeedEvent)) (stop func(), last uint64, err error)
	// Replay calls fn with the stored events from from up to upTo.
	Replay(ctx context.Context, filter string, from events.ReplayFrom, upTo uint64, fn func(events.FeedEvent)) error
}

// Sessions carries the actions: bus.SessionClient.
type Sessions interface {
	// Send publishes a user message (its JSON) on the session's in subject.
	Send(agent, session string, msg []byte) error
	// Abort aborts the session's active run and returns the answer.
	Abort(ctx context.Context, agent, session, reason string) (*agentfleet.AssistantMessage, error)
	// Decide publishes a decision on a call that waits for approval and
	// returns the orchestrator's reply.
	Decide(ctx context.Context, agent, session string, decision []byte) (*agentfleet.ApprovalReply, error)
}

// Config configures a Handler. The zero value of each optional field means
// the documented default.
type Config struct {
	// Feed is required.
	Feed Feed
	// Sessions, when nil, makes the dashboard read only: the page shows no
	// actions and the action endpoints answer 403.
	Sessions Sessions
	// Fleet lists the workers for the fleet view; nil hides the view.
	// Typically a call of bus.FleetStatus.
	Fleet func(ctx context.Context) ([]fleet.WorkerStatus, error)
	// Objects, if set, serves the files that results refer to on
	// GET /api/object?ref=…; nil: none (404).
	Objects Objects
	// History, if set, serves a session's stored records on GET
	// /api/history, so the page can open any stored session, not only
	// those whose events it saw; nil: none (404).
	History History
	// ClientBuffer is how many events may wait for one page before the
	// page is dropped (its stream closed; the browser reconnects and
	// resumes after the last event it got). Optional; default 8192.
	ClientBuffer int
	// ClientBufferBytes bounds the bytes of event data that may wait for
	// one page, likewise. Optional; default 16 MiB.
	ClientBufferBytes int64
	// MaxRuns is how many runs the page keeps in memory, dropping the
	// oldest; a page may ask fewer or more with ?max_runs=. Optional;
	// default 200.
	MaxRuns int
	// Since is how far back a page replays when it asks no range.
	// Optional; default 1h.
	Since time.Duration
	// MaxBody bounds the body of an action request. Optional; default 64 KiB.
	MaxBody int64
	// TraceURL links a run's trace id (the trace_id of its events) to a
	// tracing UI: an http or https URL in which the page replaces
	// {trace_id} with the id, such as
	// http://localhost:16686/trace/{trace_id} for Jaeger (see
	// CheckTraceURL). Optional; default none: the page shows the id as
	// text.
	TraceURL string
	// Traces, when not nil, serves the built-in trace view (GET
	// /api/trace and the page trace.html): the page links a run's trace
	// id to it when TraceURL is empty. Typically the orchestrator's
	// tracing.Recent.
	Traces Traces
	// Limits bound the event streams of the pages.
	Limits Limits
	// CanAct, when not nil, says whether a request's credential may act
	// (send, abort, approve): false answers the actions 403 and hides them
	// on the page. Typically httpauth.RoleOf(r) == httpauth.Writer.
	CanAct func(r *http.Request) bool
	// LoggedIn, when not nil, says whether a request came with a login
	// session, for the page to offer Log out.
	LoggedIn func(r *http.Request) bool
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Handler serves the dashboard. Mount it at "/" of a mux whose other
// patterns are more specific.
type Handler struct {
	cfg Config
	mux *http.ServeMux
	hub *hub
	// streams holds a token per open event stream: at most
	// Limits.MaxClients.
	streams chan struct{}
	stop    func()
	done    chan struct{}
	once    sync.Once

	fleetMu   sync.Mutex
	fleetAt   time.Time
	fleetBody []byte
}

// New starts following the feed and returns the handler. It fails when the
// feed cannot be followed or cfg.TraceURL is not a trace URL template.
func New(ctx context.Context, cfg Config) (*Handler, error) {
	if cfg.Feed == nil {
		return nil, errors.New("dashboard: no event feed")
	}
	if err := CheckTraceURL(cfg.TraceURL); err != nil {
		return nil, fmt.Errorf("dashboard: trace URL %w", err)
	}
	if cfg.ClientBuffer <= 0 {
		cfg.ClientBuffer = 8192
	}
	if cfg.ClientBufferBytes <= 0 {
		cfg.ClientBufferBytes = 16 << 20
	}
	if cfg.MaxRuns <= 0 {
		cfg.MaxRuns = 200
	}
	if cfg.Since <= 0 {
		cfg.Since = time.Hour
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 64 << 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Limits = cfg.Limits.withDefaults()
	cfg.Since = min(cfg.Since, cfg.Limits.MaxReplay)
	h := &Handler{cfg: cfg, hub: newHub(), streams: make(chan struct{}, cfg.Limits.MaxClients), done: make(chan struct{})}
	stop, last, err := cfg.Feed.Follow(ctx, h.hub.publish)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	h.stop = stop
	h.hub.start(last)
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /api/events", h.serveEvents)
	h.mux.HandleFunc("GET /api/fleet", h.serveFleet)
	h.mux.HandleFunc("GET /api/trace", h.serveTrace)
	h.mux.HandleFunc("GET /api/object", h.serveObject)
	h.mux.HandleFunc("GET /api/history", h.serveHistory)
	h.mux.HandleFunc("POST /api/send", h.serveSend)
	h.mux.HandleFunc("POST /api/abort", h.serveAbort)
	h.mux.HandleFunc("POST /api/approve", h.serveApprove)
	h.mux.Handle("GET /", staticFiles())
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The page runs only its own script: even markup that escaped the
	// page's escaping could not run code.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// No referrer to other sites (a trace UI); same-origin rather than
	// no-referrer so that the Log out form's POST carries its Origin.
	w.Header().Set("Referrer-Policy", "same-origin")
	h.mux.ServeHTTP(w, r)
}

// ReadOnly reports whether the dashboard has no actions.
func (h *Handler) ReadOnly() bool { return h.cfg.Sessions == nil }

// canAct reports whether r may act: the dashboard has actions and r's
// credential may use them.
func (h *Handler) canAct(r *http.Request) bool {
	return h.cfg.Sessions != nil && (h.cfg.CanAct == nil || h.cfg.CanAct(r))
}

// Close stops following the feed and ends the event streams of the pages,
// so that a server's Shutdown need not wait for them. It is safe to call
// more than once.
func (h *Handler) Close() error {
	h.once.Do(func() {
		h.stop()
		close(h.done)
	})
	return nil
}
