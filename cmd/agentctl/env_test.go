package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestNATSURLFromEnv: agentctl connects to $NATS_URL when --nats-url is not
// given, and --nats-url wins over it.
func TestNATSURLFromEnv(t *testing.T) {
	url := startFleet(t)
	askWith := func(args ...string) (string, error) {
		m := NewMain()
		out, errs := newOutput(), newOutput()
		m.Stdout, m.Stderr, m.Stdin = out, errs, strings.NewReader("")
		if err := m.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := m.Run(ctx)
		return out.String(), err
	}
	t.Setenv("NATS_URL", url)
	if out, err := askWith("ask", "default", "env", "echo from env"); err != nil || out != "echo: from env\n" {
		t.Errorf("with NATS_URL: stdout %q, err %v", out, err)
	}
	// A NATS_URL where nothing listens, and the flag naming the fleet.
	t.Setenv("NATS_URL", "nats://127.0.0.1:1")
	if out, err := askWith("--nats-url", url, "ask", "default", "env", "echo flag wins"); err != nil || out != "echo: flag wins\n" {
		t.Errorf("--nats-url over NATS_URL: stdout %q, err %v", out, err)
	}
	if _, err := askWith("ask", "default", "env", "echo nowhere"); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("with a NATS_URL where nothing listens: err = %v, want one naming it", err)
	}
}
