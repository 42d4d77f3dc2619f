package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
)

// TestDashboardCommand runs agentctl dashboard: it serves the page and
// the event stream on --http, without actions under --read-only (and
// with them otherwise), with the --trace-url given, until its context
// ends.
func TestDashboardCommand(t *testing.T) {
	url := startFleet(t)
	for _, tc := range []struct {
		args     []string
		readOnly string
	}{
		{[]string{"dashboard", "--http", "127.0.0.1:0", "--read-only"}, `"read_only":true`},
		{[]string{"dashboard", "--http", "127.0.0.1:0"}, `"read_only":false`},
		{[]string{"dashboard", "--http", "127.0.0.1:0", "--trace-url", "http://localhost:16686/trace/{trace_id}"}, `"trace_url":"http://localhost:16686/trace/{trace_id}"`},
	} {
		p := newProg(t, url, nil, tc.args...)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		bustest.Eventually(t, "the dashboard's listener", func() bool { return p.DashboardAddr() != "" })
		base := "http://" + p.DashboardAddr()
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "app.js") {
			t.Fatalf("GET / = %s %.200s", resp.Status, body)
		}
		resp, err = http.Get(base + "/api/events?since=0")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		var hello string
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				hello = line
				break
			}
		}
		if !strings.Contains(hello, tc.readOnly) {
			t.Errorf("%s: hello = %s, want %s", strings.Join(tc.args, " "), hello, tc.readOnly)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", strings.Join(tc.args, " "), err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not stop with an event stream open", strings.Join(tc.args, " "))
		}
		resp.Body.Close()
	}
	if err := NewMain().ParseFlags([]string{"dashboard", "extra"}); err == nil {
		t.Error("dashboard took an argument")
	}
	if err := NewMain().ParseFlags([]string{"ask", "--read-only", "default", "x", "hi"}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("--read-only on ask: err = %v", err)
	}
	if err := NewMain().ParseFlags([]string{"ask", "--trace-url", "http://localhost:16686/trace/{trace_id}", "default", "x", "hi"}); err == nil || !strings.Contains(err.Error(), "trace-url") {
		t.Errorf("--trace-url on ask: err = %v", err)
	}
	if err := NewMain().ParseFlags([]string{"dashboard", "--trace-url", "http://localhost:16686/trace/"}); err == nil ||
		!strings.Contains(err.Error(), `agentctl dashboard: --trace-url: "http://localhost:16686/trace/" holds no {trace_id}`) {
		t.Errorf("--trace-url without {trace_id}: err = %v", err)
	}
	t.Setenv("AGENTFLEET_TRACE_URL", "javascript:alert('{trace_id}')")
	if err := NewMain().ParseFlags([]string{"dashboard"}); err == nil || !strings.Contains(err.Error(), "$AGENTFLEET_TRACE_URL (the default of --trace-url)") {
		t.Errorf("a bad $AGENTFLEET_TRACE_URL: err = %v, want one naming it", err)
	}
	// Only the dashboard reads it.
	if err := NewMain().ParseFlags([]string{"ask", "default", "x", "hi"}); err != nil {
		t.Errorf("ask with a bad $AGENTFLEET_TRACE_URL: %v", err)
	}
}
