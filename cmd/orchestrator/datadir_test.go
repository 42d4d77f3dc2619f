package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
)

// logLines collects a child's log while the test reads it.
type logLines struct {
	mu   sync.Mutex
	text strings.Builder
}

func (l *logLines) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.WriteString(line + "\n")
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

// startLogged starts the orchestrator program as a child process and
// returns once a line of its log contains ready; the log is collected, and
// copied to the test's stderr. The log is complete once the process has
// been waited for.
func startLogged(t *testing.T, args, ready string) (*exec.Cmd, *logLines, func() error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ORCHESTRATOR_CHILD_ARGS="+args, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := new(logLines)
	found := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(out)
		seen := false
		for sc.Scan() {
			os.Stderr.WriteString(sc.Text() + "\n")
			logs.add(sc.Text())
			if !seen && strings.Contains(sc.Text(), ready) {
				seen = true
				close(found)
			}
		}
	}()
	// Wait reads the pipe to its end before it reaps the process.
	wait := func() error {
		<-copied
		return cmd.Wait()
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		wait()
	})
	select {
	case <-found:
	case <-time.After(20 * time.Second):
		t.Fatalf("the orchestrator did not log %q:\n%s", ready, logs)
	}
	return cmd, logs, wait
}

// runToEnd runs the orchestrator program as a child process that is
// expected to fail at start-up, and returns its stderr and how long it ran.
func runToEnd(t *testing.T, args string) (string, time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ORCHESTRATOR_CHILD_ARGS="+args, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	go func() {
		<-ctx.Done()
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
	}()
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the orchestrator ended with %v, want exit status 1; stderr:\n%s", err, stderr.String())
	}
	return stderr.String(), time.Since(start)
}

// TestDataDirShared starts two orchestrator processes on one data folder,
// on different NATS ports: the second fails at once, naming the folder and
// --data-dir, and the first goes on serving.
func TestDataDirShared(t *testing.T) {
	dir := t.TempDir()
	startLogged(t, "--listen 127.0.0.1:0 --http 127.0.0.1:0 --workers 1 --data-dir "+dir, "orchestrator serving")
	stderr, took := runToEnd(t, "--listen 127.0.0.1:0 --http 127.0.0.1:0 --data-dir "+dir)
	if !strings.Contains(stderr, dir) || !strings.Contains(stderr, "--data-dir") || !strings.Contains(stderr, "in use") {
		t.Errorf("stderr = %q, want the folder, --data-dir and that it is in use", stderr)
	}
	if took > 5*time.Second {
		t.Errorf("the second orchestrator took %v to fail", took)
	}
}

// TestDataDirSharedInProcess: two embedded servers of one process on one
// folder; the second is refused while the first runs, and the folder is
// free again once the first has closed.
func TestDataDirSharedInProcess(t *testing.T) {
	dir := t.TempDir()
	first := NewMain()
	first.Stderr = new(strings.Builder)
	if err := first.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--http", ""}); err != nil {
		t.Fatal(err)
	}
	if err := first.Run(context.Background()); err != nil {
		first.Close()
		t.Fatal(err)
	}
	second := NewMain()
	second.Stderr = new(strings.Builder)
	if err := second.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--http", ""}); err != nil {
		t.Fatal(err)
	}
	err := second.Run(context.Background())
	second.Close()
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("second err = %v, want one naming %s and --data-dir", err, dir)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third := NewMain()
	third.Stderr = new(strings.Builder)
	if err := third.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--http", ""}); err != nil {
		t.Fatal(err)
	}
	if err := third.Run(context.Background()); err != nil {
		t.Errorf("after the first closed: %v", err)
	}
	third.Close()
}

// TestDataDirUnwritable: a data folder that cannot be created fails the
// start at once, naming the folder. The tests run as root, for whom no mode
// bits forbid anything, so the folder is made impossible instead: its
// parent is a regular file.
func TestDataDirUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "data")
	stderr, took := runToEnd(t, "--listen 127.0.0.1:0 --http 127.0.0.1:0 --data-dir "+dir)
	if !strings.Contains(stderr, dir) || !strings.Contains(stderr, "--data-dir") || !strings.Contains(stderr, "not writable") {
		t.Errorf("stderr = %q, want the folder, --data-dir and that it is not writable", stderr)
	}
	if took > 5*time.Second {
		t.Errorf("the orchestrator took %v to fail", took)
	}
}

// TestHTTPTakenSuggests: a taken --http address suggests turning it off or
// another address.
func TestHTTPTakenSuggests(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--http", l.Addr().String(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	err = m.Run(context.Background())
	m.Close()
	if err == nil || !strings.Contains(err.Error(), `--http ""`) || !strings.Contains(err.Error(), "--http 127.0.0.1:0") {
		t.Errorf("err = %v, want one suggesting --http \"\" and --http 127.0.0.1:0", err)
	}
}

// TestStartAndStopLogs: the in-process workers are counted as the operator
// gave them and the fleet's services labelled as such; SIGTERM says what
// the orchestrator waits for; without workers a warning says that no tool
// is served.
func TestStartAndStopLogs(t *testing.T) {
	cmd, logs, wait := startLogged(t, "--listen 127.0.0.1:0 --http 127.0.0.1:0 --shutdown-timeout 7s --workers 2 --data-dir "+t.TempDir(), "orchestrator serving")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Errorf("after SIGTERM: %v", err)
	}
	got := logs.String()
	for _, want := range []string{
		`msg="in-process tool workers" workers=2 `,
		` worker_services=2`,
		`msg="stopping on SIGTERM: waiting up to 7s for 0 active runs; those still going then are suspended for a restart to resume"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s", want)
		}
	}
	if strings.Contains(got, "no tool worker serves any tool") {
		t.Error("a warning that no tool is served, with two workers")
	}
	// Stopping at once cuts the look for pending input short: no warning.
	if strings.Contains(got, "sessions with pending input") {
		t.Error("a warning about pending input, from a stop right after the start")
	}

	_, logs, _ = startLogged(t, "--listen 127.0.0.1:0 --http 127.0.0.1:0 --data-dir "+t.TempDir(), "orchestrator serving")
	bustest.Eventually(t, "the warning that no tool is served", func() bool {
		return strings.Contains(logs.String(), `level=WARN msg="no tool worker serves any tool yet`)
	})
}
