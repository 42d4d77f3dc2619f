package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startLogged starts the orchestrator program as a child process and
// returns once a line of its log contains ready; the rest of its log is
// copied to the test's stderr.
func startLogged(t *testing.T, args, ready string) *exec.Cmd {
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
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		seen := false
		for sc.Scan() {
			os.Stderr.WriteString(sc.Text() + "\n")
			if !seen && strings.Contains(sc.Text(), ready) {
				seen = true
				close(found)
			}
		}
		io.Copy(os.Stderr, out)
	}()
	select {
	case <-found:
	case <-time.After(20 * time.Second):
		t.Fatalf("the orchestrator did not log %q", ready)
	}
	return cmd
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
