package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats-server/v2/server"
)

// lockedWriter is a log destination the test reads while the program runs.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestStandaloneUnderDeployConf runs the single-process command of
// deploy/nats/README.md: the embedded server with deploy/nats/nats.conf,
// the orchestrator and its in-process workers as the user standalone, its
// password from --password-file. A person's user (alice) is answered in her
// own inbox space, and nobody meets a permission violation.
func TestStandaloneUnderDeployConf(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	conf := filepath.Join("..", "..", "deploy", "nats", "nats.conf")
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	passwords := map[string]string{}
	for _, u := range opts.Users {
		passwords[u.Username] = u.Password
	}
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte(passwords["standalone"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &lockedWriter{}
	m := NewMain()
	m.Stderr = logs
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--http", "127.0.0.1:0",
		"--nats-config", conf, "--user", "standalone", "--password-file", pwFile, "--workers", "1"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatalf("%v\n%s", err, logs)
	}
	t.Cleanup(func() { m.Close() })

	nc, err := bus.Connect(bus.ConnectConfig{URL: m.NATSURL(), User: "alice", Password: passwords["alice"]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	final := ask(t, nc, "agent.ask.default.alice1", "what is 2*(3+4)?")
	if got := agentfleet.JoinText(final.Content); !strings.Contains(got, "14") {
		t.Errorf("answer %q, want 14", got)
	}
	if strings.Contains(logs.String(), "ermission") {
		t.Errorf("a permission violation:\n%s", logs)
	}
}
