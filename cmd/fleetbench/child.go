package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// childEnv marks a child process, so that a test binary standing in for
// fleetbench knows to run main instead of its tests.
const childEnv = "FLEETBENCH_CHILD"

// readyTimeout bounds the start of a child process.
const readyTimeout = 30 * time.Second

// child is a worker or responder process started by a benchmark. It prints
// "ready <ident>" on its standard output once it serves, and exits when its
// standard input closes.
type child struct {
	name  string
	ident string // what the child said after "ready": a worker's name/id
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// startChild starts fleetbench again as a child process running args (a
// hidden subcommand and its flags), and waits until it reports ready.
func (m *Main) startChild(ctx context.Context, name string, args ...string) (*child, error) {
	args = append(args, "--nats-url", m.url)
	if m.ProfileDir != "" {
		args = append(args, "--cpuprofile", filepath.Join(m.ProfileDir, "fleetbench-"+m.Command+"-"+name+".cpu.pprof"))
	}
	cmd := exec.Command(m.Exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = m.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "ready"); ok {
				select {
				case ready <- strings.TrimSpace(rest):
				default:
				}
			}
		}
		// Wait only once the output is read to its end (os/exec's rule).
		c.done <- cmd.Wait()
	}()
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case c.ident = <-ready:
		return c, nil
	case err := <-c.done:
		c.done <- err
		return nil, fmt.Errorf("%s exited before it was ready: %v", name, err)
	case <-t.C:
		c.kill()
		return nil, fmt.Errorf("%s not ready after %v", name, readyTimeout)
	case <-ctx.Done():
		c.kill()
		return nil, ctx.Err()
	}
}

// stop closes the child's standard input and waits for it to exit, killing
// it if it takes more than a few seconds.
func (c *child) stop() error {
	c.stdin.Close()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case err := <-c.done:
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		return nil
	case <-t.C:
		c.kill()
		return fmt.Errorf("%s did not exit within 10s of being asked; killed", c.name)
	}
}

func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// stopChildren stops every child, joining their errors.
func stopChildren(cs []*child) error {
	var errs []error
	for _, c := range cs {
		if c != nil {
			errs = append(errs, c.stop())
		}
	}
	return errors.Join(errs...)
}

// serveUntilParentGoes tells the parent the child is ready, then blocks
// until ctx ends or standard input reaches its end (the parent closed it, or
// died).
func (m *Main) serveUntilParentGoes(ctx context.Context, ident string) {
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, m.Stdin)
		close(gone)
	}()
	fmt.Fprintln(m.Stdout, "ready", ident)
	select {
	case <-ctx.Done():
	case <-gone:
	}
}
