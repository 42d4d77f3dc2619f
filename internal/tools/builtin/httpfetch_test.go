package builtin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer starts a test server that counts its requests.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func hello(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, "hello, world")
}

func serverAddr(t *testing.T, srv *httptest.Server) netip.AddrPort {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return netip.MustParseAddrPort(u.Host)
}

func TestHTTPFetchRefusesPrivate(t *testing.T) {
	srv, hits := countingServer(t, hello)
	port := serverAddr(t, srv).Port()
	tests := []struct {
		name string
		url  string
		want []string // any of these error texts
	}{
		{"loopback IP", srv.URL, []string{
			"http_fetch: refusing to connect to 127.0.0.1: loopback address (start the worker with --allow-private to allow)"}},
		{"localhost", fmt.Sprintf("http://localhost:%d/", port), []string{
			"http_fetch: refusing to connect to 127.0.0.1: loopback address (start the worker with --allow-private to allow)",
			"http_fetch: refusing to connect to ::1: loopback address (start the worker with --allow-private to allow)"}},
		{"IPv6 loopback", fmt.Sprintf("http://[::1]:%d/", port), []string{
			"http_fetch: refusing to connect to ::1: loopback address (start the worker with --allow-private to allow)"}},
		{"mapped loopback", fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port), []string{
			"http_fetch: refusing to connect to 127.0.0.1: loopback address (start the worker with --allow-private to allow)"}},
		{"unspecified", fmt.Sprintf("http://0.0.0.0:%d/", port), []string{
			"http_fetch: refusing to connect to 0.0.0.0: unspecified address (start the worker with --allow-private to allow)"}},
		{"metadata service", "http://169.254.169.254/latest/meta-data/", []string{
			"http_fetch: refusing to connect to 169.254.169.254: link-local address (start the worker with --allow-private to allow)"}},
		{"private", "https://10.1.2.3/", []string{
			"http_fetch: refusing to connect to 10.1.2.3: private address (start the worker with --allow-private to allow)"}},
	}
	fetch := HTTPFetch(Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := run(context.Background(), t, fetch, map[string]any{"url": tt.url})
			if err == nil {
				t.Fatalf("fetched %s: %s", tt.url, text(res))
			}
			found := false
			for _, w := range tt.want {
				found = found || err.Error() == w
			}
			if !found {
				t.Errorf("error = %q, want one of %q", err, tt.want)
			}
		})
	}
	if got := hits.Load(); got != 0 {
		t.Errorf("server got %d requests, want 0", got)
	}
}

// TestHTTPFetchRefusesRedirectToPrivate allows the first server's exact
// address (so that a loopback test server stands in for a public one) and
// checks that a redirect to another loopback address, by IP or by name, is
// refused by the real rules before it connects.
func TestHTTPFetchRefusesRedirectToPrivate(t *testing.T) {
	target, targetHits := countingServer(t, hello)
	port := serverAddr(t, target).Port()
	tests := []struct {
		name     string
		location string
		want     []string
	}{
		{"by IP", target.URL + "/secret", []string{
			"http_fetch: refusing to connect to 127.0.0.1: loopback address (start the worker with --allow-private to allow)"}},
		{"by name", fmt.Sprintf("http://localhost:%d/secret", port), []string{
			"http_fetch: refusing to connect to 127.0.0.1: loopback address (start the worker with --allow-private to allow)",
			"http_fetch: refusing to connect to ::1: loopback address (start the worker with --allow-private to allow)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			front, frontHits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.location, http.StatusFound)
			})
			allowed := serverAddr(t, front)
			// The dialer may check addresses from several goroutines.
			var mu sync.Mutex
			var checked []netip.AddrPort
			fetch := newHTTPFetch(func(ap netip.AddrPort) error {
				mu.Lock()
				checked = append(checked, ap)
				mu.Unlock()
				if ap == allowed {
					return nil
				}
				return checkPublic(ap)
			})
			res, err := run(context.Background(), t, fetch, map[string]any{"url": front.URL})
			if err == nil {
				t.Fatalf("fetched: %s", text(res))
			}
			found := false
			for _, w := range tt.want {
				found = found || err.Error() == w
			}
			if !found {
				t.Errorf("error = %q, want one of %q", err, tt.want)
			}
			if got, want := frontHits.Load(), int64(1); got != want {
				t.Errorf("front server got %d requests, want %d", got, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(checked) < 2 {
				t.Errorf("checked addresses %v, want the front server's and the redirect target's", checked)
			}
		})
	}
	if got := targetHits.Load(); got != 0 {
		t.Errorf("redirect target got %d requests, want 0", got)
	}
}

func TestHTTPFetchAllowPrivate(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/page", http.StatusMovedPermanently)
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>hi</html>")
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, strings.Repeat("abcdefghij", 1000))
		case "/utf8":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, "aé") // 'é' is two bytes: a limit of 2 cuts it
		case "/binary":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
		case "/missing":
			http.NotFound(w, r)
		}
	})
	fetch := HTTPFetch(Options{AllowPrivate: true})
	tests := []struct {
		name          string
		args          map[string]any
		wantText      string
		wantStatus    int
		wantTruncated bool
	}{
		{"page", map[string]any{"url": srv.URL + "/page"},
			"status: 200 OK\ncontent-type: text/html\n\n<html>hi</html>", 200, false},
		{"redirect", map[string]any{"url": srv.URL + "/redirect"},
			"status: 200 OK\ncontent-type: text/html\n\n<html>hi</html>", 200, false},
		{"not found", map[string]any{"url": srv.URL + "/missing"},
			"status: 404 Not Found\ncontent-type: text/plain; charset=utf-8\n\n404 page not found\n", 404, false},
		{"truncated", map[string]any{"url": srv.URL + "/big", "max_bytes": float64(25)},
			"status: 200 OK\ncontent-type: text/plain\n\nabcdefghijabcdefghijabcde\n\n[truncated after 25 bytes]", 200, true},
		{"default limit", map[string]any{"url": srv.URL + "/big"},
			"status: 200 OK\ncontent-type: text/plain\n\n" + strings.Repeat("abcdefghij", 1000)[:DefaultFetchBytes] + "\n\n[truncated after 4096 bytes]", 200, true},
		{"exact limit", map[string]any{"url": srv.URL + "/page", "max_bytes": int64(15)},
			"status: 200 OK\ncontent-type: text/html\n\n<html>hi</html>", 200, false},
		{"cut character", map[string]any{"url": srv.URL + "/utf8", "max_bytes": uint8(2)},
			"status: 200 OK\ncontent-type: text/plain; charset=utf-8\n\na\n\n[truncated after 2 bytes]", 200, true},
		{"binary", map[string]any{"url": srv.URL + "/binary"},
			"status: 200 OK\ncontent-type: image/png\n\n[16 bytes of binary content (image/png) not shown]", 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := run(context.Background(), t, fetch, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := text(res), tt.wantText; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
			if got, want := res.Details["status"], any(tt.wantStatus); got != want {
				t.Errorf("details status = %v, want %v", got, want)
			}
			if got, want := res.Details["truncated"], any(tt.wantTruncated); got != want {
				t.Errorf("details truncated = %v, want %v", got, want)
			}
		})
	}
}

func TestHTTPFetchRedirectLimit(t *testing.T) {
	var srv *httptest.Server
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/again", http.StatusFound)
	})
	_, err := run(context.Background(), t, HTTPFetch(Options{AllowPrivate: true}), map[string]any{"url": srv.URL})
	if got, want := fmt.Sprint(err), "http_fetch: stopped after 5 redirects (at "+srv.URL+"/again)"; got != want {
		t.Errorf("error = %s, want %s", got, want)
	}
	if got, want := hits.Load(), int64(MaxRedirects+1); got != want {
		t.Errorf("server got %d requests, want %d", got, want)
	}
}

func TestHTTPFetchArguments(t *testing.T) {
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	fetch := HTTPFetch(Options{AllowPrivate: true})
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing url", map[string]any{}, `http_fetch: missing required argument "url"`},
		{"file scheme", map[string]any{"url": "file:///etc/passwd"}, `http_fetch: unsupported scheme "file" in "file:///etc/passwd" (only http and https)`},
		{"gopher scheme", map[string]any{"url": "gopher://example.com/"}, `http_fetch: unsupported scheme "gopher" in "gopher://example.com/" (only http and https)`},
		{"no scheme", map[string]any{"url": "example.com/page"}, `http_fetch: url "example.com/page" has no scheme; use http:// or https://`},
		{"no host", map[string]any{"url": "http:///path"}, `http_fetch: url "http:///path" has no host`},
		{"malformed", map[string]any{"url": "http://[::1"}, `http_fetch: invalid url "http://[::1": missing ']' in host`},
		{"max_bytes zero", map[string]any{"url": "https://example.com/", "max_bytes": 0.0}, `http_fetch: argument "max_bytes" must be between 1 and 1048576, got 0`},
		{"max_bytes too big", map[string]any{"url": "https://example.com/", "max_bytes": int64(1048577)}, `http_fetch: argument "max_bytes" must be between 1 and 1048576, got 1048577`},
		{"max_bytes fraction", map[string]any{"url": "https://example.com/", "max_bytes": 10.5}, `http_fetch: argument "max_bytes" must be an integer, got 10.5`},
		{"redirect to file", map[string]any{"url": srv.URL}, `http_fetch: refusing redirect to "file:///etc/passwd": scheme "file" is not http or https`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(context.Background(), t, fetch, tt.args)
			if got, want := fmt.Sprint(err), tt.want; got != want {
				t.Errorf("error = %s, want %s", got, want)
			}
		})
	}
	if got, want := hits.Load(), int64(1); got != want {
		t.Errorf("server got %d requests, want %d", got, want)
	}
}

func TestHTTPFetchCancel(t *testing.T) {
	arrived := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // hold the request until the client gives up
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, t, HTTPFetch(Options{AllowPrivate: true}), map[string]any{"url": srv.URL})
		done <- err
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("request did not reach the server within 10 s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
		if got, want := fmt.Sprint(err), "http_fetch: fetching "+srv.URL+": context canceled"; got != want {
			t.Errorf("error = %s, want %s", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fetch did not return within 10 s of cancellation")
	}
}

func TestNonPublic(t *testing.T) {
	tests := []struct {
		addr string
		want string
	}{
		{"127.0.0.1", "loopback address"},
		{"127.255.0.9", "loopback address"},
		{"::1", "loopback address"},
		{"::ffff:127.0.0.1", "loopback address"},
		{"0.0.0.0", "unspecified address"},
		{"0.1.2.3", "unspecified address"},
		{"::", "unspecified address"},
		{"169.254.169.254", "link-local address"},
		{"fe80::1", "link-local address"},
		{"fe80::1%eth0", "link-local address"},
		{"10.0.0.1", "private address"},
		{"172.16.0.1", "private address"},
		{"172.31.255.255", "private address"},
		{"192.168.1.1", "private address"},
		{"fd00::1", "private address"},
		{"fc00::1", "private address"},
		{"::ffff:192.168.0.1", "private address"},
		{"224.0.0.1", "multicast address"},
		{"239.255.255.250", "multicast address"},
		{"ff02::1", "multicast address"},
		{"100.64.0.1", "shared (CGNAT) address"},
		{"100.127.255.255", "shared (CGNAT) address"},
		{"255.255.255.255", "broadcast address"},
		{"64:ff9b::a00:1", "private address behind NAT64"},
		{"64:ff9b::7f00:1", "loopback address behind NAT64"},
		{"64:ff9b::808:808", ""},
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"172.32.0.1", ""},
		{"192.169.0.1", ""},
		{"2001:4860:4860::8888", ""},
		{"::ffff:8.8.8.8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got, want := nonPublic(netip.MustParseAddr(tt.addr)), tt.want; got != want {
				t.Errorf("nonPublic(%s) = %q, want %q", tt.addr, got, want)
			}
		})
	}
}
