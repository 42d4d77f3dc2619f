// Package httpauth guards an HTTP listener of the fleet (the orchestrator's
// --http, agentctl dashboard): the Host allow-list that defeats DNS
// rebinding, bearer tokens and a login session cookie with a viewer and a
// writer role, the Origin check of what a browser may change, and bounds
// on request bodies. Guard.Decide is the decision, a function of the
// request's facts; Guard.Wrap is the thin handler around it.
package httpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// Config configures a Guard. The zero value of an optional field means
// its documented default.
type Config struct {
	// WriterToken may watch and act; ViewerToken may only watch. With
	// either, every route but the probes, /login and (unless MetricsAuth)
	// /metrics needs a credential.
	WriterToken, ViewerToken string
	// MCPToken is one more token accepted on /mcp (and only there), with
	// the writer role: --mcp-token. Alone it guards /mcp and nothing else.
	MCPToken string
	// ProxyUserHeader, when set, is the header in which an authenticating
	// proxy in front (oauth2-proxy and the like) names the user: a request
	// that carries it, with no token or cookie, is that user's, a writer
	// when in ProxyWriters, else a viewer. The listener must then be
	// reachable by the proxy alone, since anyone else could set the header.
	ProxyUserHeader string
	// ProxyWriters are the users of ProxyUserHeader given the writer role.
	ProxyWriters []string
	// Hosts is the Host allow-list; see NewHosts. Optional; default the
	// loopback names.
	Hosts Hosts
	// MetricsAuth makes /metrics need the viewer role.
	MetricsAuth bool
	// SessionTTL is how long a login lasts. Optional; default
	// DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxBody bounds every request body, in bytes. Optional; default
	// DefaultMaxBody.
	MaxBody int64
	// BodyTimeout bounds the reading of a request's body, from the moment
	// the handler gets the request. Optional; default DefaultBodyTimeout.
	BodyTimeout time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// DefaultMaxBody is the default bound of a request body.
const DefaultMaxBody = 4 << 20

// DefaultBodyTimeout is the default bound of the reading of a body.
const DefaultBodyTimeout = 30 * time.Second

// Guard checks the requests of one listener.
type Guard struct {
	cfg      Config
	sessions *sessions // nil without writer or viewer tokens
}

// New returns the guard of cfg.
func New(cfg Config) *Guard {
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Hosts.names == nil && !cfg.Hosts.any {
		cfg.Hosts, _ = NewHosts("", nil)
	}
	g := &Guard{cfg: cfg}
	if cfg.WriterToken != "" || cfg.ViewerToken != "" {
		g.sessions = newSessions(cfg.SessionTTL, cfg.WriterToken, cfg.ViewerToken)
	}
	return g
}

// protected reports whether the listener has writer or viewer tokens, or
// trusts a proxy's user header.
func (g *Guard) protected() bool {
	return g.cfg.WriterToken != "" || g.cfg.ViewerToken != "" || g.cfg.ProxyUserHeader != ""
}

// Protected reports whether the whole listener needs credentials (it has
// writer or viewer tokens), as opposed to /mcp alone (--mcp-token) or
// nothing.
func (g *Guard) Protected() bool { return g.protected() }

type ctxKey struct{}

type access struct {
	role     Role
	byCookie bool
}

// RoleOf returns the role the guard gave a request; Writer for a request
// that passed no guard.
func RoleOf(r *http.Request) Role {
	if a, ok := r.Context().Value(ctxKey{}).(access); ok {
		return a.role
	}
	return Writer
}

// LoggedIn reports whether a request was authenticated by the login
// session cookie (so that the page may offer to log out).
func LoggedIn(r *http.Request) bool {
	a, ok := r.Context().Value(ctxKey{}).(access)
	return ok && a.byCookie
}

// Wrap returns h behind the guard: a request the guard refuses gets its
// status and a text that says why (JSON {"error": ...} under /api/, the
// login page for a page), /login and /logout are the guard's own on a
// protected listener, and every body is bounded in size and in time.
func (g *Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cookie := ""
		if c, err := r.Cookie(CookieName); err == nil {
			cookie = c.Value
		}
		f := Facts{Method: r.Method, Path: r.URL.Path, Host: r.Host, Origin: r.Header.Get("Origin"),
			Authorization: r.Header.Get("Authorization"), Cookie: cookie, Now: time.Now()}
		if g.cfg.ProxyUserHeader != "" {
			f.ProxyUser = r.Header.Get(g.cfg.ProxyUserHeader)
		}
		v := g.Decide(f)
		if v.Status != 0 {
			g.refuse(w, r, v)
			return
		}
		g.boundBody(w, r)
		if g.sessions != nil && classify(r.Method, r.URL.Path) == routeLogin {
			g.serveLogin(w, r, cookie)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, access{role: v.Role, byCookie: v.ByCookie})))
	})
}

// refuse answers a refused request.
func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, v Verdict) {
	if v.Status == http.StatusForbidden {
		g.cfg.Logger.Info("http: request refused", "method", r.Method, "path", r.URL.Path, "host", r.Host, "remote", r.RemoteAddr, "why", v.Message)
	}
	if v.Login {
		loginPage(w, v.Status, "")
		return
	}
	if v.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentfleet"`)
	}
	Error(w, r, v.Status, v.Message)
}

// Error answers a refused request: {"error": text} as JSON under /api/
// (what the page reads), else the status and text as plain text.
func Error(w http.ResponseWriter, r *http.Request, code int, text string) {
	w.Header().Set("Cache-Control", "no-store")
	if classify(r.Method, r.URL.Path) == routeAPIRead || classify(r.Method, r.URL.Path) == routeAction {
		b, _ := json.Marshal(map[string]string{"error": text})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write(append(b, '\n'))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, "%d %s: %s\n", code, http.StatusText(code), text)
}

// boundBody bounds a request's body: at most MaxBody bytes, read within
// BodyTimeout. The read deadline is lifted once the body is read to its
// end, so that a long answer (a tool call over /mcp) is not cut, and a
// request without a body (an event stream) never gets one.
func (g *Guard) boundBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(g.cfg.BodyTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		g.cfg.Logger.Debug("http: no read deadline", "err", err)
	}
	r.Body = &deadlineBody{ReadCloser: http.MaxBytesReader(w, r.Body, g.cfg.MaxBody), rc: rc}
}

// deadlineBody lifts the read deadline at the end of the body.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
