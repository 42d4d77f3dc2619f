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
// anyone publish), that an open event stream does not hold Close up, and
// that --dashboard=false turns it off.
func TestDashboardAtRoot(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
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
	if !strings.Contains(hello, `"read_only":false`) || !strings.Contains(hello, `"replay":true`) {
		t.Errorf("hello = %s, want actions and replay", hello)
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
