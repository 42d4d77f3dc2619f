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
	"go.yaml.in/yaml/v3"
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

// TestDeployConfsSyncAlways: every shipped nats-server configuration (the
// standalone one, compose's, and the Kubernetes ConfigMap's) syncs every
// JetStream write to disk before acknowledging it.
func TestDeployConfsSyncAlways(t *testing.T) {
	deploy := filepath.Join("..", "..", "deploy")
	k8s := filepath.Join(t.TempDir(), "k8s")
	if err := os.Mkdir(k8s, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(deploy, "k8s", "nats.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(manifest))
	found := false
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if doc.Kind != "ConfigMap" || doc.Data["nats.conf"] == "" {
			continue
		}
		found = true
		for name, text := range doc.Data {
			if err := os.WriteFile(filepath.Join(k8s, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !found {
		t.Fatal("deploy/k8s/nats.yaml: no ConfigMap with a nats.conf")
	}
	// The variables the configurations take from the environment.
	for _, v := range []string{"SERVER_NAME", "NATS_ORCHESTRATOR_PASSWORD", "NATS_TOOLWORKER_PASSWORD", "NATS_CLIENT_PASSWORD", "NATS_DASHBOARD_PASSWORD"} {
		t.Setenv(v, "sentinel-"+strings.ToLower(v))
	}
	for _, conf := range []string{
		filepath.Join(deploy, "nats", "nats.conf"),
		filepath.Join(deploy, "nats", "compose.conf"),
		filepath.Join(k8s, "nats.conf"),
	} {
		opts, err := server.ProcessConfigFile(conf)
		if err != nil {
			t.Errorf("%s: %v", conf, err)
			continue
		}
		if !opts.JetStream || !opts.SyncAlways {
			t.Errorf("%s: jetstream %v, sync always %v (sync_interval %v); want JetStream with sync_interval: always", conf, opts.JetStream, opts.SyncAlways, opts.SyncInterval)
		}
	}
}
