package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
)

// TestJetStreamConf checks the child server's configuration for each sync
// policy: JetStream on, its store under the directory given (quoted, so
// that a path with spaces survives), and the sync interval nats-server
// reads.
func TestJetStreamConf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy busserver.Sync
		want   string
	}{
		{"always", busserver.SyncAlways, "sync_interval: always"},
		{"lazy", busserver.Sync{Interval: 2 * time.Minute}, `sync_interval: "2m0s"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := jetStreamConf("/tmp/a dir", tc.policy)
			for _, want := range []string{"jetstream {", `store_dir: "/tmp/a dir/js"`, tc.want} {
				if !strings.Contains(got, want) {
					t.Errorf("conf lacks %q:\n%s", want, got)
				}
			}
		})
	}
}

// TestRSSOf reads this process's resident set size, and 0 for a status
// file that does not exist.
func TestRSSOf(t *testing.T) {
	if got := rssOf("/proc/self/status"); got == 0 {
		t.Skip("no /proc here")
	}
	if got := rssOf("/proc/no-such-process/status"); got != 0 {
		t.Errorf("RSS of a missing process = %d, want 0", got)
	}
}

// TestSessionsDurableServerProcess runs the sessions benchmark durable with
// nats-server as a child process: the child has JetStream, every run is
// answered, and the report has the server's memory beside this process's.
func TestSessionsDurableServerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nats-server")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build nats-server")
	}
	var rep SessionsReport
	tables := runBench(t, &rep, "sessions", "--server", "process", "--durable", "--sync", "2m", "--sessions", "10", "--concurrency", "4")
	d := rep.Durable
	if d == nil || d.Runs != 10 {
		t.Fatalf("durable round = %+v, want 10 runs", d)
	}
	if d.Server == nil || d.Server.After == 0 {
		t.Errorf("durable round's server memory = %+v, want the child's RSS", d.Server)
	}
	if !strings.Contains(tables, "NATS server process: RSS") {
		t.Errorf("tables lack the server's memory:\n%s", tables)
	}
}
