package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	testWriterToken = "writer-0123456789abcdef"
	testViewerToken = "viewer-0123456789abcdef"
	testMCPToken    = "mcp-0123456789abcdef"
)

// tokenFile writes a token to a file of the test's.
func tokenFile(t *testing.T, name, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// guardedRun runs the orchestrator with writer, viewer and MCP tokens.
func guardedRun(t *testing.T, args ...string) *Main {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	return run(t, append([]string{"--workers", "1",
		"--http-token-file", tokenFile(t, "writer", testWriterToken),
		"--http-viewer-token-file", tokenFile(t, "viewer", testViewerToken),
		"--mcp-token", testMCPToken}, args...)...)
}

// httpRoute is one route of --http with a request body that it serves.
type httpRoute struct {
	method, path, body string
	class              string // page, read, action, mcp, open
}

var httpRoutes = []httpRoute{
	{"GET", "/", "", "page"},
	{"GET", "/app.js", "", "page"},
	{"GET", "/api/events?since=0", "", "read"},
	{"GET", "/api/fleet", "", "read"},
	{"POST", "/api/send", `{"agent":"default","session":"auth","content":"hi"}`, "action"},
	{"POST", "/api/abort", `{"agent":"default","session":"auth"}`, "action"},
	{"POST", "/api/approve", `{"agent":"default","session":"auth","tool_call_id":"call_x","approve":true}`, "action"},
	{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "mcp"},
	{"POST", "/mcp/default", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "mcp"},
	{"GET", "/metrics", "", "open"},
	{"GET", "/healthz", "", "open"},
	{"GET", "/readyz", "", "open"},
	{"GET", "/api/trace?id=4bf92f3577b34da6a3ce929d0e0e4736", "", "read"},
	{"GET", "/trace.html", "", "page"},
	{"GET", "/api/history?agent=default&session=auth", "", "read"},
	{"GET", "/stored.js", "", "page"},
}

// credential is how a request authenticates.
type credential struct {
	name   string
	bearer string
	cookie *http.Cookie
}

// send makes one request to the route, with the credential and, when not
// empty, a Host header other than the address; the event stream's body is
// not read past its status.
func send(t *testing.T, base string, r httpRoute, c credential, host string) (int, string) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	origin := base
	if host != "" {
		req.Host = host
		origin = "http://" + host
	}
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	if c.cookie != nil || host != "" {
		req.Header.Set("Origin", origin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(r.path, "/api/events") && resp.StatusCode == 200 {
		return 200, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// login posts a token to /login as the login page's form does and returns
// the session cookie.
func login(t *testing.T, base, token string) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader("token="+url.QueryEscape(token)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "agentfleet_session" {
			return ck
		}
	}
	t.Fatalf("login: %s and no session cookie", resp.Status)
	return nil
}

// TestHTTPAuthEveryRoute sends every route of --http with no credential,
// a wrong token, a forged cookie, the viewer's and the writer's token and
// login cookie, and --mcp-token: the probes and /metrics serve anyone, a
// viewer watches and acts nowhere, a writer does everything, --mcp-token
// opens /mcp alone, and the rest is refused with 401 or 403.
func TestHTTPAuthEveryRoute(t *testing.T) {
	m := guardedRun(t)
	base := "http://" + m.HTTPAddr()
	creds := []credential{
		{name: "none"},
		{name: "wrong token", bearer: "not-a-token-of-this-server"},
		{name: "forged cookie", cookie: &http.Cookie{Name: "agentfleet_session", Value: "djF8d3JpdGVyfDQxMDI0NDQ4MDB8MDA.c2lnbmF0dXJl"}},
		{name: "viewer token", bearer: testViewerToken},
		{name: "viewer cookie", cookie: login(t, base, testViewerToken)},
		{name: "writer token", bearer: testWriterToken},
		{name: "writer cookie", cookie: login(t, base, testWriterToken)},
		{name: "mcp token", bearer: testMCPToken},
	}
	// want is the status class: "ok" (served), 401 or 403.
	want := func(class, cred string) string {
		if class == "open" {
			return "ok"
		}
		switch cred {
		case "none", "wrong token", "forged cookie":
			return "401"
		case "writer token", "writer cookie":
			return "ok"
		case "mcp token":
			if class == "mcp" {
				return "ok"
			}
			return "401"
		}
		// The viewer's.
		if class == "page" || class == "read" {
			return "ok"
		}
		return "403"
	}
	for _, c := range creds {
		for _, r := range httpRoutes {
			t.Run(c.name+" "+r.method+" "+r.path, func(t *testing.T) {
				code, body := send(t, base, r, c, "")
				got := "ok"
				if code == 401 || code == 403 {
					got = fmt.Sprint(code)
				}
				if w := want(r.class, c.name); got != w {
					t.Fatalf("status %d %.300s, want %s", code, body, w)
				}
				switch {
				case got == "401" && r.class == "page":
					if !strings.Contains(body, `<form id="login"`) {
						t.Errorf("a page without a credential is not the login page: %.300s", body)
					}
				case got == "401" && !strings.Contains(body, "Authorization: Bearer"):
					t.Errorf("401 body %q does not say how to authenticate", body)
				case got == "403" && !strings.Contains(body, "writer role"):
					t.Errorf("403 body %q does not say the writer role is needed", body)
				case got == "ok" && r.path == "/api/send" && code != 202:
					t.Errorf("send as %s: %d %s, want 202", c.name, code, body)
				case got == "ok" && r.class == "mcp" && code != 200:
					t.Errorf("tools/list as %s: %d %s, want 200", c.name, code, body)
				case got == "ok" && r.class == "page" && code != 200:
					t.Errorf("%s as %s: %d, want 200", r.path, c.name, code)
				}
			})
		}
	}
	// A viewer's page shows no actions.
	if hello := helloOf(t, base, credential{bearer: testViewerToken}); !strings.Contains(hello, `"read_only":true`) {
		t.Errorf("the viewer's hello = %s, want read only", hello)
	}
	if hello := helloOf(t, base, credential{bearer: testWriterToken}); !strings.Contains(hello, `"read_only":false`) {
		t.Errorf("the writer's hello = %s, want actions", hello)
	}
}

// helloOf reads the hello event of an event stream.
func helloOf(t *testing.T, base string, c credential) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/events?since=0", nil)
	req.Header.Set("Authorization", "Bearer "+c.bearer)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			return line
		}
	}
	t.Fatalf("no hello: %v", sc.Err())
	return ""
}

// TestHTTPDNSRebinding: a request naming a Host that is not allowed, with
// the Origin of that host (a page on http://evil.example:PORT whose name
// was rebound to this listener) is refused on every route with 403 naming
// the host and the flag, on the default listener without credentials (the
// quick start) and with the writer's token alike; the listener goes on
// serving.
func TestHTTPDNSRebinding(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	open := run(t, "--workers", "1")
	guarded := guardedRun(t)
	for _, tc := range []struct {
		name string
		m    *Main
		c    credential
	}{
		{"no credentials", open, credential{}},
		{"writer token", guarded, credential{bearer: testWriterToken}},
	} {
		base := "http://" + tc.m.HTTPAddr()
		_, port, _ := net.SplitHostPort(tc.m.HTTPAddr())
		evil := "evil.example:" + port
		for _, r := range httpRoutes {
			t.Run(tc.name+" "+r.method+" "+r.path, func(t *testing.T) {
				code, body := send(t, base, r, tc.c, evil)
				if code != http.StatusForbidden || !strings.Contains(body, evil) || !strings.Contains(body, "is not one this server answers to") || !strings.Contains(body, "--http-allowed-hosts") {
					t.Fatalf("status %d %q, want 403 naming the host and --http-allowed-hosts", code, body)
				}
			})
		}
		if code, _ := send(t, base, httpRoutes[0], tc.c, ""); code != 200 {
			t.Errorf("%s: GET / after the refusals = %d, want 200", tc.name, code)
		}
		if code, _ := send(t, base, httpRoutes[0], tc.c, "localhost:"+port); code != 200 {
			t.Errorf("%s: GET / by localhost = %d, want 200", tc.name, code)
		}
	}
	// An allowed name is served.
	named := run(t, "--workers", "1", "--http-allowed-hosts", "dash.example.com")
	if code, body := send(t, "http://"+named.HTTPAddr(), httpRoutes[0], credential{}, "dash.example.com"); code != 200 {
		t.Errorf("GET / as dash.example.com, allowed: %d %.200s", code, body)
	}
}

// TestHTTPNonLoopbackNeedsCredentials: --http on 0.0.0.0 without any
// credential fails the start with how to set them; with --insecure-http it
// starts; a short token file fails with the bound.
func TestHTTPNonLoopbackNeedsCredentials(t *testing.T) {
	t.Setenv("AGENTFLEET_HTTP_TOKEN_FILE", "")
	t.Setenv("AGENTFLEET_HTTP_VIEWER_TOKEN_FILE", "")
	m := NewMain()
	m.Stderr = new(strings.Builder)
	err := m.ParseFlags([]string{"--http", "0.0.0.0:0"})
	if err == nil {
		t.Fatal("--http 0.0.0.0:0 without credentials started")
	}
	for _, want := range []string{"--http 0.0.0.0:0", "not a loopback address", "--http-token-file", "$AGENTFLEET_HTTP_TOKEN_FILE", "--http-viewer-token-file", "--insecure-http"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// --mcp-token alone does not cover the dashboard.
	if err := NewMain().ParseFlags([]string{"--http", "0.0.0.0:0", "--mcp-token", testMCPToken}); err == nil {
		t.Error("--http 0.0.0.0:0 with only --mcp-token and the dashboard started")
	}
	short := tokenFile(t, "short", "s3cret")
	err = NewMain().ParseFlags([]string{"--http", "0.0.0.0:0", "--http-token-file", short})
	if err == nil || !strings.Contains(err.Error(), "--http-token-file "+short) || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("a short token: err = %v, want the flag, the file and the bound", err)
	}
	t.Setenv("AGENTFLEET_HTTP_TOKEN_FILE", short)
	if err := NewMain().ParseFlags(nil); err == nil || !strings.Contains(err.Error(), "$AGENTFLEET_HTTP_TOKEN_FILE") {
		t.Errorf("a short token from the environment: err = %v, want the variable named", err)
	}
	t.Setenv("AGENTFLEET_HTTP_TOKEN_FILE", "")
	// An authenticating proxy's header is a credential.
	if err := NewMain().ParseFlags([]string{"--http", "0.0.0.0:0", "--http-proxy-user-header", "X-Forwarded-User", "--http-proxy-writers", "ada"}); err != nil {
		t.Errorf("0.0.0.0 behind an authenticating proxy: %v", err)
	}
	if err := NewMain().ParseFlags([]string{"--http-proxy-writers", "ada"}); err == nil || !strings.Contains(err.Error(), "--http-proxy-user-header") {
		t.Errorf("--http-proxy-writers alone: err = %v", err)
	}

	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	insecure := run(t, "--workers", "1", "--http", "0.0.0.0:0", "--insecure-http")
	_, port, _ := net.SplitHostPort(insecure.HTTPAddr())
	if code, _ := scrape(t, "http://127.0.0.1:"+port+"/"); code != 200 {
		t.Errorf("--insecure-http on 0.0.0.0: GET / = %d", code)
	}
	if s := insecure.Stderr.(*strings.Builder).String(); !strings.Contains(s, "--insecure-http") || !strings.Contains(s, "level=WARN") {
		t.Errorf("--insecure-http logged no warning:\n%s", s)
	}
	withToken := run(t, "--workers", "1", "--http", "0.0.0.0:0", "--http-token-file", tokenFile(t, "w", testWriterToken))
	_, port, _ = net.SplitHostPort(withToken.HTTPAddr())
	if code, _ := scrape(t, "http://127.0.0.1:"+port+"/api/fleet"); code != 401 {
		t.Errorf("0.0.0.0 with a token: GET /api/fleet anonymous = %d, want 401", code)
	}
}

// TestHTTPSlowBody: a client that sends its headers and then trickles the
// body is cut off at --http-body-timeout; the listener goes on serving.
func TestHTTPSlowBody(t *testing.T) {
	m := guardedRun(t, "--http-body-timeout", "1s")
	conn, err := net.Dial("tcp", m.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/send HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", m.HTTPAddr(), testWriterToken)
	answered := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(conn)
		answered <- string(b)
	}()
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case got := <-answered:
			t.Logf("cut after %v: %.60q", time.Since(start).Round(10*time.Millisecond), got)
			if got != "" && !strings.Contains(got, "timeout") {
				t.Errorf("answer %q, want a read timeout or the connection closed", got)
			}
			done = true
		case <-tick.C:
			if time.Since(start) > 30*time.Second {
				t.Fatal("a trickled body is still being read after 30 s")
			}
			conn.Write([]byte(" "))
		}
	}
	if code, body := send(t, "http://"+m.HTTPAddr(), httpRoutes[4], credential{bearer: testWriterToken}, ""); code != 202 {
		t.Fatalf("send after the slow client: %d %s", code, body)
	}
}

// TestHTTPEventStreamCap: with --dashboard-max-clients 2, a third event
// stream is answered 503 with Retry-After and why; once one of the two
// leaves, a new one is served.
func TestHTTPEventStreamCap(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	m := run(t, "--workers", "1", "--dashboard-max-clients", "2")
	base := "http://" + m.HTTPAddr()
	open := func() (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/events?since=0", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return resp, func() { cancel(); resp.Body.Close() }
	}
	r1, close1 := open()
	defer close1()
	r2, close2 := open()
	defer close2()
	if r1.StatusCode != 200 || r2.StatusCode != 200 {
		t.Fatalf("the first two streams: %d %d", r1.StatusCode, r2.StatusCode)
	}
	r3, close3 := open()
	if r3.StatusCode == 200 {
		close3()
		t.Fatal("a third stream over --dashboard-max-clients 2 was served")
	}
	b, _ := io.ReadAll(r3.Body)
	close3()
	if r3.StatusCode != http.StatusServiceUnavailable || r3.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "--dashboard-max-clients") {
		t.Fatalf("a third stream: %d Retry-After %q %s, want 503 with Retry-After naming the flag", r3.StatusCode, r3.Header.Get("Retry-After"), b)
	}
	close1()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, c := open()
		code := r.StatusCode
		c()
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stream after one left: still %d", code)
		}
		time.Sleep(50 * time.Millisecond) // the first stream's handler returns on its own time
	}
}
