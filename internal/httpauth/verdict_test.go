package httpauth

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	writerTok = "writer-token-0123456789"
	viewerTok = "viewer-token-0123456789"
	mcpTok    = "mcp-token-0123456789"
)

func testGuard(t *testing.T, cfg Config) *Guard {
	t.Helper()
	var err error
	if cfg.Hosts, err = NewHosts("127.0.0.1:8080", []string{"dash.example.com"}); err != nil {
		t.Fatal(err)
	}
	return New(cfg)
}

// TestDecide is the guard's decision on every class of route with every
// kind of credential, on a listener with writer and viewer tokens and one
// without.
func TestDecide(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	g := testGuard(t, Config{WriterToken: writerTok, ViewerToken: viewerTok, MCPToken: mcpTok})
	writerCookie := g.sessions.issue(Writer, now)
	viewerCookie := g.sessions.issue(Viewer, now)
	expired := g.sessions.issue(Writer, now.Add(-DefaultSessionTTL-time.Second))
	other := New(Config{WriterToken: "another-writer-token-xyz"}).sessions.issue(Writer, now)
	// A viewer's cookie with its role raised to writer keeps the viewer's
	// signature.
	raised := raiseRole(t, viewerCookie)

	const host = "127.0.0.1:8080"
	const origin = "http://127.0.0.1:8080"
	bearer := func(tok string) string { return "Bearer " + tok }
	type want struct {
		status int
		role   Role
		login  bool
		msg    string
	}
	for _, c := range []struct {
		name string
		f    Facts
		want want
	}{
		// Probes and the login page need nothing.
		{"healthz anonymous", Facts{Method: "GET", Path: "/healthz"}, want{}},
		{"readyz anonymous", Facts{Method: "GET", Path: "/readyz"}, want{}},
		{"metrics anonymous", Facts{Method: "GET", Path: "/metrics"}, want{}},
		{"login page", Facts{Method: "GET", Path: "/login"}, want{}},
		{"login post", Facts{Method: "POST", Path: "/login", Origin: origin}, want{}},

		// No credential.
		{"page anonymous shows login", Facts{Method: "GET", Path: "/"}, want{status: 401, login: true, msg: "needs a credential"}},
		{"events anonymous", Facts{Method: "GET", Path: "/api/events"}, want{status: 401, msg: "--http-token-file"}},
		{"send anonymous", Facts{Method: "POST", Path: "/api/send"}, want{status: 401}},
		{"approve anonymous", Facts{Method: "POST", Path: "/api/approve"}, want{status: 401}},
		{"mcp anonymous", Facts{Method: "POST", Path: "/mcp"}, want{status: 401}},

		// The viewer token watches, and acts nowhere.
		{"page viewer", Facts{Method: "GET", Path: "/", Authorization: bearer(viewerTok)}, want{role: Viewer}},
		{"events viewer", Facts{Method: "GET", Path: "/api/events", Authorization: bearer(viewerTok)}, want{role: Viewer}},
		{"fleet viewer", Facts{Method: "GET", Path: "/api/fleet", Authorization: bearer(viewerTok)}, want{role: Viewer}},
		{"send viewer", Facts{Method: "POST", Path: "/api/send", Authorization: bearer(viewerTok)}, want{status: 403, msg: "needs the writer role"}},
		{"approve viewer", Facts{Method: "POST", Path: "/api/approve", Authorization: bearer(viewerTok)}, want{status: 403, msg: "needs the writer role"}},
		{"abort viewer", Facts{Method: "POST", Path: "/api/abort", Authorization: bearer(viewerTok)}, want{status: 403}},
		{"mcp viewer", Facts{Method: "POST", Path: "/mcp", Authorization: bearer(viewerTok)}, want{status: 403}},
		{"mcp agent viewer", Facts{Method: "POST", Path: "/mcp/default", Authorization: bearer(viewerTok)}, want{status: 403}},

		// The writer token does everything.
		{"page writer", Facts{Method: "GET", Path: "/", Authorization: bearer(writerTok)}, want{role: Writer}},
		{"send writer", Facts{Method: "POST", Path: "/api/send", Authorization: bearer(writerTok)}, want{role: Writer}},
		{"approve writer", Facts{Method: "POST", Path: "/api/approve", Authorization: bearer(writerTok), Origin: origin}, want{role: Writer}},
		{"mcp writer", Facts{Method: "POST", Path: "/mcp", Authorization: bearer(writerTok)}, want{role: Writer}},
		// A2A: the cards are public, the endpoints a writer's.
		{"a2a card anonymous", Facts{Method: "GET", Path: "/.well-known/agent-card.json"}, want{role: Anonymous}},
		{"a2a agent card anonymous", Facts{Method: "GET", Path: "/a2a/ops/.well-known/agent-card.json"}, want{role: Anonymous}},
		{"a2a card posted", Facts{Method: "POST", Path: "/a2a/ops/.well-known/agent-card.json"}, want{status: 401}},
		{"a2a deeper card path", Facts{Method: "GET", Path: "/a2a/ops/x/.well-known/agent-card.json"}, want{status: 401}},
		{"a2a anonymous", Facts{Method: "POST", Path: "/a2a/ops"}, want{status: 401}},
		{"a2a index anonymous", Facts{Method: "GET", Path: "/a2a"}, want{status: 401}},
		{"a2a viewer", Facts{Method: "POST", Path: "/a2a/ops", Authorization: bearer(viewerTok)}, want{status: 403}},
		{"a2a mcp token", Facts{Method: "POST", Path: "/a2a/ops", Authorization: bearer(mcpTok)}, want{status: 401}},
		{"a2a writer", Facts{Method: "POST", Path: "/a2a/ops", Authorization: bearer(writerTok)}, want{role: Writer}},
		{"scheme is case-insensitive", Facts{Method: "POST", Path: "/mcp", Authorization: "bearer " + writerTok}, want{role: Writer}},

		// --mcp-token is a writer on /mcp alone.
		{"mcp token on mcp", Facts{Method: "POST", Path: "/mcp", Authorization: bearer(mcpTok)}, want{role: Writer}},
		{"mcp token on send", Facts{Method: "POST", Path: "/api/send", Authorization: bearer(mcpTok)}, want{status: 401, msg: "not one of this server's"}},
		{"mcp token on page", Facts{Method: "GET", Path: "/", Authorization: bearer(mcpTok)}, want{status: 401, login: true}},

		// Wrong credentials.
		{"wrong token", Facts{Method: "GET", Path: "/api/events", Authorization: bearer("not-the-token-at-all")}, want{status: 401, msg: "not one of this server's"}},
		{"token prefix", Facts{Method: "GET", Path: "/api/events", Authorization: bearer(writerTok[:10])}, want{status: 401}},
		{"basic auth", Facts{Method: "GET", Path: "/api/events", Authorization: "Basic d3JpdGVy"}, want{status: 401, msg: `must be "Bearer <token>"`}},
		{"wrong token beats a good cookie", Facts{Method: "GET", Path: "/", Authorization: bearer("nope-nope-nope-nope"), Cookie: writerCookie}, want{status: 401, login: true}},

		// Cookies.
		{"writer cookie page", Facts{Method: "GET", Path: "/", Cookie: writerCookie}, want{role: Writer}},
		{"writer cookie approve", Facts{Method: "POST", Path: "/api/approve", Cookie: writerCookie, Origin: origin}, want{role: Writer}},
		{"viewer cookie events", Facts{Method: "GET", Path: "/api/events", Cookie: viewerCookie}, want{role: Viewer}},
		{"viewer cookie approve", Facts{Method: "POST", Path: "/api/approve", Cookie: viewerCookie, Origin: origin}, want{status: 403, msg: "writer role"}},
		{"forged cookie", Facts{Method: "GET", Path: "/", Cookie: "djF8d3JpdGVyfDk5OTk5OTk5OTl8MDA.AAAA"}, want{status: 401, login: true, msg: "signature"}},
		{"raised cookie", Facts{Method: "POST", Path: "/api/approve", Cookie: raised, Origin: origin}, want{status: 401, msg: "signature"}},
		{"cookie of other tokens", Facts{Method: "GET", Path: "/api/events", Cookie: other}, want{status: 401, msg: "signature"}},
		{"expired cookie", Facts{Method: "GET", Path: "/", Cookie: expired}, want{status: 401, login: true, msg: "expired"}},
		{"garbage cookie", Facts{Method: "GET", Path: "/api/events", Cookie: "garbage"}, want{status: 401}},

		// CSRF: a cookie alone does not let another site act.
		{"cookie approve without origin", Facts{Method: "POST", Path: "/api/approve", Cookie: writerCookie}, want{status: 403, msg: "must carry Origin"}},
		{"cookie approve other origin", Facts{Method: "POST", Path: "/api/approve", Cookie: writerCookie, Origin: "http://evil.example"}, want{status: 403, msg: "origin"}},
		{"bearer other origin", Facts{Method: "POST", Path: "/mcp", Authorization: bearer(writerTok), Origin: "http://evil.example"}, want{status: 403, msg: "another site"}},
		{"login other origin", Facts{Method: "POST", Path: "/login", Origin: "http://evil.example"}, want{status: 403}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f
			if f.Host == "" {
				f.Host = host
			}
			f.Now = now
			v := g.Decide(f)
			if v.Status != c.want.status || (v.Status == 0 && v.Role != c.want.role) || v.Login != c.want.login {
				t.Fatalf("Decide = %+v, want status %d role %s login %v", v, c.want.status, c.want.role, c.want.login)
			}
			if !strings.Contains(v.Message, c.want.msg) {
				t.Errorf("message %q lacks %q", v.Message, c.want.msg)
			}
		})
	}
}

// TestDecideRebinding: a Host that is not an allowed name is refused on
// every route, with a matching Origin and a good token alike: the requests
// of a page rebound to this listener's address.
func TestDecideRebinding(t *testing.T) {
	for _, g := range []*Guard{
		testGuard(t, Config{WriterToken: writerTok}),
		testGuard(t, Config{}), // loopback with no credentials
		testGuard(t, Config{MCPToken: mcpTok}),
	} {
		for _, path := range []string{"/", "/app.js", "/api/events", "/api/fleet", "/api/send", "/api/approve", "/api/abort", "/mcp", "/mcp/default", "/metrics", "/healthz", "/readyz", "/login", "/logout"} {
			for _, m := range []string{"GET", "POST"} {
				v := g.Decide(Facts{Method: m, Path: path, Host: "evil.example:8080", Origin: "http://evil.example:8080", Authorization: "Bearer " + writerTok, Now: time.Now()})
				if v.Status != http.StatusForbidden || !strings.Contains(v.Message, `host "evil.example:8080"`) || !strings.Contains(v.Message, "--http-allowed-hosts") {
					t.Errorf("%s %s with Host evil.example: %+v, want 403 naming the host and the flag", m, path, v)
				}
			}
		}
		if v := g.Decide(Facts{Method: "GET", Path: "/healthz", Host: "10.0.0.7:8080"}); v.Status != 0 {
			t.Errorf("a probe by IP address: %+v, want served", v)
		}
	}
}

// TestDecideWithoutTokens: a listener without writer or viewer tokens
// serves everyone as a writer, as before; --mcp-token alone guards /mcp.
func TestDecideWithoutTokens(t *testing.T) {
	open := testGuard(t, Config{})
	for _, p := range []string{"/", "/api/events", "/api/send", "/api/approve", "/mcp"} {
		if v := open.Decide(Facts{Method: "POST", Path: p, Host: "localhost:8080"}); v.Status != 0 || v.Role != Writer {
			t.Errorf("%s without tokens: %+v, want served as writer", p, v)
		}
	}
	mcpOnly := testGuard(t, Config{MCPToken: mcpTok})
	if v := mcpOnly.Decide(Facts{Method: "POST", Path: "/mcp", Host: "localhost"}); v.Status != 401 || !strings.Contains(v.Message, "--mcp-token") {
		t.Errorf("/mcp without its token: %+v, want 401 naming --mcp-token", v)
	}
	if v := mcpOnly.Decide(Facts{Method: "POST", Path: "/mcp", Host: "localhost", Authorization: "Bearer " + mcpTok}); v.Status != 0 {
		t.Errorf("/mcp with its token: %+v", v)
	}
	if v := mcpOnly.Decide(Facts{Method: "POST", Path: "/api/send", Host: "localhost"}); v.Status != 0 {
		t.Errorf("/api/send with --mcp-token alone: %+v, want served as before", v)
	}
	auth := testGuard(t, Config{ViewerToken: viewerTok, MetricsAuth: true})
	if v := auth.Decide(Facts{Method: "GET", Path: "/metrics", Host: "localhost"}); v.Status != 401 {
		t.Errorf("/metrics with --metrics-auth, anonymous: %+v, want 401", v)
	}
	if v := auth.Decide(Facts{Method: "GET", Path: "/metrics", Host: "localhost", Authorization: "Bearer " + viewerTok}); v.Status != 0 {
		t.Errorf("/metrics with --metrics-auth, viewer: %+v", v)
	}
}

// TestDecideProxyUser: with --http-proxy-user-header, the proxy's user is a
// writer when listed in --http-proxy-writers, else a viewer; a request
// without the header is refused; tokens keep working beside it.
func TestDecideProxyUser(t *testing.T) {
	proxied := testGuard(t, Config{ProxyUserHeader: "X-Forwarded-User", ProxyWriters: []string{"ada"}})
	tokens := testGuard(t, Config{WriterToken: writerTok, ProxyUserHeader: "X-Forwarded-User"})
	for _, c := range []struct {
		name   string
		g      *Guard
		f      Facts
		status int
		role   Role
	}{
		{"writer user approves", proxied, Facts{Method: "POST", Path: "/api/approve", ProxyUser: "ada", Origin: "http://localhost"}, 0, Writer},
		{"writer user on mcp", proxied, Facts{Method: "POST", Path: "/mcp", ProxyUser: "ada"}, 0, Writer},
		{"other user watches", proxied, Facts{Method: "GET", Path: "/api/events", ProxyUser: "bob"}, 0, Viewer},
		{"other user may not approve", proxied, Facts{Method: "POST", Path: "/api/approve", ProxyUser: "bob"}, 403, 0},
		{"no header", proxied, Facts{Method: "GET", Path: "/"}, 401, 0},
		{"blank header", proxied, Facts{Method: "GET", Path: "/api/events", ProxyUser: "  "}, 401, 0},
		{"token beside the proxy", tokens, Facts{Method: "POST", Path: "/api/send", Authorization: "Bearer " + writerTok}, 0, Writer},
		{"wrong token beats the header", tokens, Facts{Method: "POST", Path: "/api/send", Authorization: "Bearer wrong-wrong-wrong-wrong", ProxyUser: "ada"}, 401, 0},
	} {
		c.f.Host = "localhost"
		v := c.g.Decide(c.f)
		if v.Status != c.status || (c.status == 0 && v.Role != c.role) {
			t.Errorf("%s: %+v, want status %d role %s", c.name, v, c.status, c.role)
		}
	}
	if v := proxied.Decide(Facts{Method: "GET", Path: "/", Host: "localhost"}); v.Login || !strings.Contains(v.Message, "X-Forwarded-User") {
		t.Errorf("no header, no tokens: %+v, want a plain 401 naming the proxy's header", v)
	}
}

// raiseRole rewrites a viewer cookie's payload to say writer, keeping its
// signature.
func raiseRole(t *testing.T, cookie string) string {
	t.Helper()
	p64, mac, _ := strings.Cut(cookie, ".")
	payload := mustDecode(t, p64)
	raised := strings.Replace(payload, "|viewer|", "|writer|", 1)
	if raised == payload {
		t.Fatal("no role in the cookie")
	}
	return encode(raised) + "." + mac
}
