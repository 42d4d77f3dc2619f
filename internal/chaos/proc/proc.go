package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartTimeout bounds how long a (re)started child may take to be ready.
const StartTimeout = 30 * time.Second

// Proc is one supervised child process: a NATS server, an orchestrator, a
// tool worker or the ledger worker. It can be killed, signalled and started
// again with the same command line (so the same ports and store directory).
// Its standard output and error go, line by line, to a log file; a line
// containing Marker (if set) marks the current instance as "marked" (an
// orchestrator that serves, a ledger worker that is ready). Set the
// exported fields before the first Start and leave them alone after.
type Proc struct {
	// Name names the process in errors and in its log.
	Name string
	// Argv is the command line; Env is added to the harness's environment.
	Argv []string
	Env  []string
	// Log is the path of the log file, appended to.
	Log string
	// Marker, if set, is the text of the output line that marks the
	// current instance.
	Marker string
	// Unmarker, if set, unmarks the instance again (an orchestrator that
	// lost the lead and stands by); a later Marker marks it anew.
	Unmarker string
	// Ready is one readiness probe of the current instance.
	Ready func(ctx context.Context) error

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{} // closed when the current instance exited
	marked   chan struct{} // closed when the current instance printed marker
	exitErr  error
	expected bool // the harness meant the current instance to exit
	starts   int
	logFile  *os.File
	logMu    sync.Mutex
}

// Start starts a new instance. The previous one must have exited.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s: start while running", p.Name)
		}
	}
	if p.logFile == nil {
		f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("%s: log file: %w", p.Name, err)
		}
		p.logFile = f
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = sysProcAttr()
	p.starts++
	fmt.Fprintf(p.logFile, "=== %s start #%d at %s: %s\n", p.Name, p.starts, time.Now().Format(time.RFC3339Nano), strings.Join(p.Argv, " "))
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return fmt.Errorf("%s: start: %w", p.Name, err)
	}
	pw.Close()
	done, marked := make(chan struct{}), make(chan struct{})
	p.cmd, p.done, p.marked, p.exitErr, p.expected = cmd, done, marked, nil, false
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := false
		for sc.Scan() {
			line := sc.Text()
			p.logMu.Lock()
			fmt.Fprintln(p.logFile, line)
			p.logMu.Unlock()
			if !once && p.Marker != "" && strings.Contains(line, p.Marker) {
				once = true
				p.mu.Lock()
				if p.done == done {
					close(p.marked)
				}
				p.mu.Unlock()
			} else if once && p.Unmarker != "" && strings.Contains(line, p.Unmarker) {
				once = false
				p.mu.Lock()
				if p.done == done {
					p.marked = make(chan struct{})
				}
				p.mu.Unlock()
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		err := cmd.Wait()
		<-scanned
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		p.logMu.Lock()
		fmt.Fprintf(p.logFile, "=== %s exited at %s: %v\n", p.Name, time.Now().Format(time.RFC3339Nano), err)
		p.logMu.Unlock()
		close(done)
	}()
	return nil
}

// Current returns the channels of the current instance.
func (p *Proc) Current() (done, marked chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done, p.marked
}

// Alive reports whether the current instance runs.
func (p *Proc) Alive() bool {
	done, _ := p.Current()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// IsMarked reports whether the current, running instance printed its marker.
func (p *Proc) IsMarked() bool {
	done, marked := p.Current()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
	}
	select {
	case <-marked:
		return true
	default:
		return false
	}
}

// Signal sends sig to the current instance; expectExit says the harness
// means it to exit (a fault), so that the supervisor does not count it as an
// unexpected exit.
func (p *Proc) Signal(sig syscall.Signal, expectExit bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return fmt.Errorf("%s: not started", p.Name)
	}
	if expectExit {
		p.expected = true
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: signal %v: %w", p.Name, sig, err)
	}
	return nil
}

// UnexpectedExit reports whether the current instance exited without the
// harness asking it to, with its exit error; it marks the exit as seen.
func (p *Proc) UnexpectedExit() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return false, nil
	}
	select {
	case <-p.done:
	default:
		return false, nil
	}
	if p.expected {
		return false, nil
	}
	p.expected = true
	return true, p.exitErr
}

// WaitExit waits up to timeout for the current instance to exit.
func (p *Proc) WaitExit(ctx context.Context, timeout time.Duration) error {
	done, _ := p.Current()
	if done == nil {
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return fmt.Errorf("%s did not exit within %v", p.Name, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kill SIGKILLs the current instance and waits for it to exit.
func (p *Proc) Kill(ctx context.Context) error {
	if !p.Alive() {
		return nil
	}
	if err := p.Signal(syscall.SIGKILL, true); err != nil && p.Alive() {
		return err
	}
	return p.WaitExit(ctx, 10*time.Second)
}

// WaitReady waits until the current instance is ready (its probe passes).
// A start that fails (the instance exits first) is retried after a short
// backoff, a few times, since a child started while NATS restarts (or a
// cluster elects its leaders) may give up at once.
func (p *Proc) WaitReady(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		done, _ := p.Current()
		exited := false
		err := WaitFor(ctx, StartTimeout, p.Name+" ready", func() (bool, error) {
			select {
			case <-done:
				exited = true // no use waiting on
				return true, nil
			default:
			}
			if err := p.Ready(ctx); err != nil {
				return false, err
			}
			return true, nil
		})
		if err == nil && !exited {
			return nil
		}
		if err != nil || attempt >= 5 || ctx.Err() != nil {
			if err == nil {
				err = errExited
			}
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		p.mu.Lock()
		p.expected = true
		p.mu.Unlock()
		// A backoff of the retries, not a wait for an event.
		if err := Pause(ctx, time.Duration(attempt)*500*time.Millisecond); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if err := p.Start(); err != nil {
			return err
		}
	}
}

var errExited = errors.New("the process exited")

// Restart starts the process again (it must have exited) and waits for it
// to be ready.
func (p *Proc) Restart(ctx context.Context) error {
	if err := p.Start(); err != nil {
		return err
	}
	return p.WaitReady(ctx)
}

// Close kills the process, if running, and closes its log file.
func (p *Proc) Close() {
	_ = p.Kill(context.Background())
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logFile != nil {
		p.logMu.Lock()
		p.logFile.Close()
		p.logMu.Unlock()
		p.logFile = nil
	}
}

// ExitError returns how the last instance exited: nil for exit status 0.
func (p *Proc) ExitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return errors.New("never started")
	}
	return p.exitErr
}

// CountLines counts the lines of the log that contain s.
func (p *Proc) CountLines(s string) int {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}

// Tail returns the last n lines of the log, so that a failure can say what
// the process said last (an exit status alone says nothing of why).
func (p *Proc) Tail(n int) string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
