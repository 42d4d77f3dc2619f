// Package a2aserver serves the fleet's agents over A2A (Agent2Agent,
// protocol 0.3, JSON-RPC over HTTP with SSE streams): an Agent Card and a
// JSON-RPC endpoint per agent, under /a2a/<agent>, and the default
// agent's card at /.well-known/agent-card.json. A task is the run that
// answers one user message of a session (the task's context); its state
// is read from the session's stored history every time, so that any
// orchestrator answers for any task, also after the one that ran it died.
// The JSON-RPC codec and SSE framing are the a2a-go SDK's; the tasks are
// not kept by it.
package a2aserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/a2asrv"
)

// Config configures the A2A server. Backend is required; every other
// field is optional and its zero value means the documented default.
type Config struct {
	Backend Backend
	// Bearer tells the card that the listener needs Authorization: Bearer
	// <token> (the fleet's HTTP authentication, which guards the
	// listener: this package checks no credential itself).
	Bearer bool
	// DefaultAgent is the agent of /.well-known/agent-card.json; default
	// "default", or the first agent by name when there is none of that
	// name.
	DefaultAgent string
	// MaxBody bounds a JSON-RPC request's body; default 1 MiB.
	MaxBody int64
	// Poll is how often a waiting request reads its task from the stored
	// history when no event says it changed; default 1s.
	Poll time.Duration
	// SubmitWait bounds the wait for a run to take a sent message (after
	// which the task is answered as submitted) and for a canceled run's
	// end; default 60s.
	SubmitWait time.Duration
	// MaxWatches bounds the tasks followed at once (requests that wait
	// on a task, streams); one more is refused with a JSON-RPC error that
	// says so. Default 256.
	MaxWatches int
	// Version is the cards' version; default "0.1.0".
	Version string
	Logger  *slog.Logger
}

// Server is the A2A server of the fleet's agents.
type Server struct {
	cfg      Config
	watching atomic.Int64
}

// Prefix is the path under which each agent is served: /a2a/<agent>.
const Prefix = "/a2a/"

// ProtocolVersion is the A2A protocol version the server speaks.
const ProtocolVersion = "0.3.0"

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.DefaultAgent == "" {
		cfg.DefaultAgent = "default"
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.SubmitWait <= 0 {
		cfg.SubmitWait = time.Minute
	}
	if cfg.MaxWatches <= 0 {
		cfg.MaxWatches = 256
	}
	if cfg.Version == "" {
		cfg.Version = "0.1.0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{cfg: cfg}
}

// Handler serves /a2a, /a2a/... and /.well-known/agent-card.json:
//
//	GET  /.well-known/agent-card.json            the default agent's card
//	GET  /a2a                                    {"agents":[{"name","card","url"}]}
//	GET  /a2a/<agent>/.well-known/agent-card.json  the agent's card
//	POST /a2a/<agent>                            the agent's JSON-RPC endpoint
//
// An unknown agent is a 404 that names the known ones.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if path == WellKnown {
			s.serveCard(w, r, s.defaultAgent())
			return
		}
		if path == "/a2a" || path == Prefix {
			s.serveIndex(w, r)
			return
		}
		rest, ok := strings.CutPrefix(path, Prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		agent, tail, _ := strings.Cut(rest, "/")
		if !slices.Contains(s.cfg.Backend.Agents(), agent) {
			http.Error(w, fmt.Sprintf("404 no agent %q here (agents: %s)", clip(agent), strings.Join(s.cfg.Backend.Agents(), ", ")), http.StatusNotFound)
			return
		}
		switch tail {
		case strings.TrimPrefix(WellKnown, "/"):
			s.serveCard(w, r, agent)
		case "":
			s.serveRPC(w, r, agent)
		default:
			http.NotFound(w, r)
		}
	})
}

// WellKnown is the path of an Agent Card.
const WellKnown = "/.well-known/agent-card.json"

func (s *Server) defaultAgent() string {
	agents := s.cfg.Backend.Agents()
	if slices.Contains(agents, s.cfg.DefaultAgent) || len(agents) == 0 {
		return s.cfg.DefaultAgent
	}
	return slices.Min(agents)
}

// baseURL is the scheme and host the request came to.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) serveCard(w http.ResponseWriter, r *http.Request, agent string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 an agent card is read with GET", http.StatusMethodNotAllowed)
		return
	}
	tools, ok := s.cfg.Backend.Tools(agent)
	if !ok {
		http.Error(w, fmt.Sprintf("404 no agent %q here", agent), http.StatusNotFound)
		return
	}
	card := Card(agent, baseURL(r)+Prefix+agent, tools, s.cfg.Bearer, s.cfg.Version)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(card)
}

func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	type entry struct {
		Name string `json:"name"`
		Card string `json:"card"`
		URL  string `json:"url"`
	}
	out := struct {
		Agents []entry `json:"agents"`
	}{Agents: []entry{}}
	for _, a := range s.cfg.Backend.Agents() {
		u := baseURL(r) + Prefix + a
		out.Agents = append(out.Agents, entry{a, u + WellKnown, u})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// v1Methods are the JSON-RPC names of A2A 1.0, answered with an error
// that names the 0.3 method, since their payloads differ.
var v1Methods = map[string]string{
	"SendMessage": "message/send", "SendStreamingMessage": "message/stream", "GetTask": "tasks/get",
	"CancelTask": "tasks/cancel", "SubscribeToTask": "tasks/resubscribe", "ListTasks": "",
}

// serveRPC reads the body, bounded, and hands it to the SDK's JSON-RPC
// codec over the agent's handler.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request, agent string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "405 the A2A endpoint takes JSON-RPC requests by POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		rpcError(w, nil, -32700, fmt.Sprintf("the request body could not be read (at most %d bytes): %v", s.cfg.MaxBody, err))
		return
	}
	var head struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &head) == nil {
		if m, ok := v1Methods[head.Method]; ok {
			msg := fmt.Sprintf("method %s is A2A 1.0; this server speaks A2A %s", head.Method, ProtocolVersion)
			if m != "" {
				msg += ": use " + m
			}
			rpcError(w, head.ID, -32601, msg)
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	a2asrv.NewJSONRPCHandler(&handler{s: s, agent: agent}).ServeHTTP(w, r)
}

func rpcError(w http.ResponseWriter, id any, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}
