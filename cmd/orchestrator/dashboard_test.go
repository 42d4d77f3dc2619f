package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
)

// TestDashboardAtRoot checks that the orchestrator serves the dashboard at
// / of --http beside /metrics, with its actions (the embedded server lets
// anyone publish) and the trace URL of $AGENTFLEET_TRACE_URL, that an open
// event stream does not hold Close up, and that --dashboard=false turns it
// off.
func TestDashboardAtRoot(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("AGENTFLEET_TRACE_URL", "http://localhost:16686/trace/{trace_id}")
	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--nats-url", srv.ClientURL(), "--workers", "1", "--http", "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := "http://" + m.HTTPAddr()
	code, body := scrape(t, base+"/")
	if code != 200 || !strings.Contains(body, "<title>agentfleet</title>") {
		t.Fatalf("GET / = %d %.200s", code, body)
	}
	if code, _ := scrape(t, base+"/metrics"); code != 200 {
		t.Errorf("/metrics = %d beside the dashboard", code)
	}
	resp, err := http.Get(base + "/api/events?since=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var hello string
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			hello = line
			break
		}
	}
	if !strings.Contains(hello, `"read_only":false`) || !strings.Contains(hello, `"replay":true`) ||
		!strings.Contains(hello, `"trace_url":"http://localhost:16686/trace/{trace_id}"`) {
		t.Errorf("hello = %s, want actions, replay and the trace URL", hello)
	}
	start := time.Now()
	m.Close()
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Close took %v with an event stream open", d)
	}

	m = NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--nats-url", srv.ClientURL(), "--workers", "1", "--http", "127.0.0.1:0", "--dashboard=false"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if code, _ := scrape(t, "http://"+m.HTTPAddr()+"/"); code != 404 {
		t.Errorf("GET / with --dashboard=false = %d, want 404", code)
	}
}

// TestBadTraceURL: a --trace-url that is not an http or https URL holding
// {trace_id} fails the start, naming the flag, or the variable it came
// from; a good one on the command line wins over the variable.
func TestBadTraceURL(t *testing.T) {
	parse := func(args ...string) error {
		m := NewMain()
		m.Stderr = new(strings.Builder)
		return m.ParseFlags(args)
	}
	for _, tc := range []struct {
		url, want string
	}{
		{"http://localhost:16686/trace/", `--trace-url: "http://localhost:16686/trace/" holds no {trace_id}`},
		{"localhost:16686/trace/{trace_id}", `--trace-url: "localhost:16686/trace/{trace_id}" is not an http or https URL`},
	} {
		if err := parse("--trace-url", tc.url); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--trace-url %s: err = %v, want %q", tc.url, err, tc.want)
		}
	}
	t.Setenv("AGENTFLEET_TRACE_URL", "ftp://tracing/{trace_id}")
	if err := parse(); err == nil || !strings.Contains(err.Error(), "$AGENTFLEET_TRACE_URL (the default of --trace-url)") {
		t.Errorf("a bad $AGENTFLEET_TRACE_URL: err = %v, want one naming it", err)
	}
	if err := parse("--trace-url", "https://tracing.example.com/trace/{trace_id}"); err != nil {
		t.Errorf("a good --trace-url over a bad $AGENTFLEET_TRACE_URL: %v", err)
	}
}
