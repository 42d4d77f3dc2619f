package httpauth

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// echoBody answers the length of the body it read, or the read's error.
var echoBody = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read: "+err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%d bytes as %s", len(b), RoleOf(r))
})

func guarded(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	g := New(cfg)
	srv := httptest.NewUnstartedServer(g.Wrap(echoBody))
	srv.Config.ReadHeaderTimeout = 5 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestSlowBodyIsCut: a client that sends its headers and then trickles the
// body is cut off at the body timeout, and the server serves the next
// request.
func TestSlowBodyIsCut(t *testing.T) {
	srv := guarded(t, Config{WriterToken: writerTok, BodyTimeout: 500 * time.Millisecond})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/send HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", writerTok)
	// Trickle a byte every 100 ms, for up to 30 s, until the server gives
	// up on the body (answers, or closes the connection).
	answered := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(bufio.NewReader(conn))
		answered <- string(b)
	}()
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var got string
wait:
	for {
		select {
		case got = <-answered:
			break wait
		case <-tick.C:
			if time.Since(start) > 30*time.Second {
				t.Fatal("a trickled body is still being read after 30 s")
			}
			conn.Write([]byte(" "))
		}
	}
	t.Logf("cut after %v: %q", time.Since(start).Round(10*time.Millisecond), firstLine(got))
	if got != "" && !strings.Contains(got, "timeout") {
		t.Errorf("answer %q, want the connection cut or a read timeout", got)
	}
	// The server still serves.
	req, _ := http.NewRequest("POST", srv.URL+"/api/send", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+writerTok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != "2 bytes as writer" {
		t.Fatalf("after the slow client: %d %q", res.StatusCode, b)
	}
}

// TestBodyBoundedButAnswerNot: a body over MaxBody is refused; a request
// whose body was read in time, and one without a body (an event stream),
// may take longer than the body timeout to be answered.
func TestBodyBoundedButAnswerNot(t *testing.T) {
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		select {
		case <-time.After(800 * time.Millisecond): // longer than the body timeout
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "%d", len(b))
	})
	g := New(Config{BodyTimeout: 300 * time.Millisecond, MaxBody: 1000, Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(g.Wrap(slow))
	defer srv.Close()
	res, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(strings.Repeat("x", 1001)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "too large") {
		t.Errorf("a body over the bound: %d %q", res.StatusCode, b)
	}
	res, err = http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(strings.Repeat("x", 1000)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != "1000" {
		t.Errorf("a slow answer after a body read in time: %d %q, want 200 1000", res.StatusCode, b)
	}
	res, err = http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != "0" {
		t.Errorf("a slow answer to a GET: %d %q, want 200 0", res.StatusCode, b)
	}
}

// TestLoginLogout: the login page's form sets an HttpOnly, SameSite=Strict
// cookie that authenticates the page; a wrong token shows the page again
// with why; logout ends the session.
func TestLoginLogout(t *testing.T) {
	srv := guarded(t, Config{WriterToken: writerTok, ViewerToken: viewerTok})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, body string, cookie *http.Cookie, origin bool) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if origin {
			req.Header.Set("Origin", srv.URL)
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	read := func(res *http.Response) string { b, _ := io.ReadAll(res.Body); return string(b) }

	res := do("GET", "/", "", nil, false)
	if page := read(res); res.StatusCode != 401 || !strings.Contains(page, `<form id="login" method="post" action="login">`) {
		t.Fatalf("GET / anonymous: %d, want 401 with the login form:\n%s", res.StatusCode, page)
	}
	res = do("POST", "/login", "token=wrong-wrong-wrong-wrong", nil, true)
	if page := read(res); res.StatusCode != 401 || !strings.Contains(page, "not one of this server") || len(res.Cookies()) != 0 {
		t.Fatalf("a wrong token: %d %v, want 401 with why and no cookie:\n%s", res.StatusCode, res.Cookies(), page)
	}
	res = do("POST", "/login", "token="+url.QueryEscape(viewerTok), nil, true)
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("login: %d %v", res.StatusCode, res.Cookies())
	}
	c := res.Cookies()[0]
	if c.Name != CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" {
		t.Errorf("cookie %+v, want HttpOnly, SameSite=Strict, not Secure over plain HTTP, Path /", c)
	}
	if res := do("GET", "/", "", c, false); res.StatusCode != 200 || read(res) != "0 bytes as viewer" {
		t.Fatalf("GET / with the cookie: %d", res.StatusCode)
	}
	res = do("POST", "/logout", "", c, true)
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 || res.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("logout: %d %v, want a cookie cleared", res.StatusCode, res.Cookies())
	}
	if res := do("GET", "/", "", c, false); res.StatusCode != 401 {
		t.Fatalf("GET / with the cookie logged out: %d, want 401", res.StatusCode)
	}
	// Over TLS behind a proxy the cookie is Secure.
	req, _ := http.NewRequest("POST", srv.URL+"/login", strings.NewReader("token="+url.QueryEscape(writerTok)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if len(res.Cookies()) != 1 || !res.Cookies()[0].Secure {
		t.Errorf("cookie behind a TLS proxy: %v, want Secure", res.Cookies())
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
