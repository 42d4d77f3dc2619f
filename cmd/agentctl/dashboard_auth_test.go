package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
)

// TestDashboardCommandCredentials runs agentctl dashboard with a writer and
// a viewer token: the page without a credential is the login page, the
// viewer watches without actions, the writer sends, a Host not allowed is
// refused; without credentials it refuses to listen on 0.0.0.0, and the
// flags are the dashboard's alone.
func TestDashboardCommandCredentials(t *testing.T) {
	url := startFleet(t)
	dir := t.TempDir()
	writer, viewer := "agentctl-writer-0123456789", "agentctl-viewer-0123456789"
	os.WriteFile(filepath.Join(dir, "w"), []byte(writer+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "v"), []byte(viewer), 0o600)
	p := newProg(t, url, nil, "dashboard", "--http", "127.0.0.1:0",
		"--http-token-file", filepath.Join(dir, "w"), "--http-viewer-token-file", filepath.Join(dir, "v"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the dashboard did not stop")
		}
	}()
	bustest.Eventually(t, "the dashboard's listener", func() bool { return p.DashboardAddr() != "" })
	base := "http://" + p.DashboardAddr()
	do := func(method, path, token, host, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == 200 && strings.HasPrefix(path, "/api/events") {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					return 200, sc.Text()
				}
			}
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	send := `{"agent":"default","session":"dash-auth","content":"hi"}`
	if code, body := do("GET", "/", "", "", ""); code != 401 || !strings.Contains(body, `<form id="login"`) {
		t.Errorf("GET / anonymous: %d %.200s, want the login page", code, body)
	}
	if code, body := do("GET", "/api/events?since=0", viewer, "", ""); code != 200 || !strings.Contains(body, `"read_only":true`) {
		t.Errorf("the viewer's stream: %d %s, want a read-only hello", code, body)
	}
	if code, body := do("POST", "/api/send", viewer, "", send); code != 403 {
		t.Errorf("send as the viewer: %d %s, want 403", code, body)
	}
	if code, body := do("POST", "/api/send", "wrong-wrong-wrong-wrong", "", send); code != 401 {
		t.Errorf("send with a wrong token: %d %s, want 401", code, body)
	}
	_, port, _ := net.SplitHostPort(p.DashboardAddr())
	if code, body := do("POST", "/api/send", writer, "evil.example:"+port, send); code != 403 || !strings.Contains(body, "evil.example") {
		t.Errorf("send with Host evil.example: %d %s, want 403", code, body)
	}
	if code, body := do("POST", "/api/send", writer, "", send); code != 202 {
		t.Errorf("send as the writer: %d %s, want 202", code, body)
	}

	// No credentials off loopback.
	t.Setenv("AGENTFLEET_HTTP_TOKEN_FILE", "")
	open := newProg(t, url, nil, "dashboard", "--http", "0.0.0.0:0")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	if err := open.Run(ctx2); err == nil || !strings.Contains(err.Error(), "--http-token-file") || !strings.Contains(err.Error(), "--insecure-http") {
		t.Errorf("dashboard on 0.0.0.0 without credentials: err = %v, want how to set them", err)
	}
	if err := NewMain().ParseFlags([]string{"ask", "--http-token-file", "x", "default", "x", "hi"}); err == nil || !strings.Contains(err.Error(), "http-token-file") {
		t.Errorf("--http-token-file on ask: err = %v", err)
	}
}
