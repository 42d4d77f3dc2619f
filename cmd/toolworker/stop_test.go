package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
)

// TestSIGTERMLogs: a worker stopped by SIGTERM says what it waits for, and
// that it drained, once each.
func TestSIGTERMLogs(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	joined, err := nc.SubscribeSync("agent.fleet")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TOOLWORKER_CHILD_ARGS=--nats-url "+srv.ClientURL()+" --tools echo --scripts --drain-timeout 3s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	if _, err := joined.NextMsg(20 * time.Second); err != nil {
		t.Fatalf("the worker did not join: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, stderr.String())
	}
	logs := stderr.String()
	for want, n := range map[string]int{
		`msg="stopping on SIGTERM: taking no more calls, waiting up to 3s for 0 calls in flight"`: 1,
		`msg="toolworker drained"`: 1,
	} {
		if got := strings.Count(logs, want); got != n {
			t.Errorf("%s logged %d times, want %d:\n%s", want, got, n, logs)
		}
	}
}
