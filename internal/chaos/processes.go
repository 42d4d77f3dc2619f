package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// startTimeout bounds how long a (re)started child may take to be ready.
const startTimeout = 30 * time.Second

// proc is one supervised child process: a NATS server, an orchestrator, a
// tool worker or the ledger worker. It can be killed, signalled and started
// again with the same command line (so the same ports and store directory).
// Its standard output and error go, line by line, to a log file; a line
// containing marker (if set) marks the current instance as "marked" (an
// orchestrator that serves, a ledger worker that is ready).
type proc struct {
	name   string
	argv   []string
	env    []string
	log    string // log file path
	marker string
	// unmarker, if set, unmarks the instance again (an orchestrator that
	// lost the lead and stands by); a later marker marks it anew.
	unmarker string
	ready    func(ctx context.Context) error // one readiness probe

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

// start starts a new instance. The previous one must have exited.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s: start while running", p.name)
		}
	}
	if p.logFile == nil {
		f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("%s: log file: %w", p.name, err)
		}
		p.logFile = f
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = sysProcAttr()
	p.starts++
	fmt.Fprintf(p.logFile, "=== %s start #%d at %s: %s\n", p.name, p.starts, time.Now().Format(time.RFC3339Nano), strings.Join(p.argv, " "))
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return fmt.Errorf("%s: start: %w", p.name, err)
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
			if !once && p.marker != "" && strings.Contains(line, p.marker) {
				once = true
				p.mu.Lock()
				if p.done == done {
					close(p.marked)
				}
				p.mu.Unlock()
			} else if once && p.unmarker != "" && strings.Contains(line, p.unmarker) {
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
		fmt.Fprintf(p.logFile, "=== %s exited at %s: %v\n", p.name, time.Now().Format(time.RFC3339Nano), err)
		p.logMu.Unlock()
		close(done)
	}()
	return nil
}

// current returns the channels of the current instance.
func (p *proc) current() (done, marked chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done, p.marked
}

// alive reports whether the current instance runs.
func (p *proc) alive() bool {
	done, _ := p.current()
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

// isMarked reports whether the current, running instance printed its marker.
func (p *proc) isMarked() bool {
	done, marked := p.current()
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

// signal sends sig to the current instance; expectExit says the harness
// means it to exit (a fault), so that the supervisor does not count it as an
// unexpected exit.
func (p *proc) signal(sig syscall.Signal, expectExit bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return fmt.Errorf("%s: not started", p.name)
	}
	if expectExit {
		p.expected = true
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: signal %v: %w", p.name, sig, err)
	}
	return nil
}

// unexpectedExit reports whether the current instance exited without the
// harness asking it to, with its exit error; it marks the exit as seen.
func (p *proc) unexpectedExit() (bool, error) {
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

// waitExit waits up to timeout for the current instance to exit.
func (p *proc) waitExit(ctx context.Context, timeout time.Duration) error {
	done, _ := p.current()
	if done == nil {
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return fmt.Errorf("%s did not exit within %v", p.name, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kill SIGKILLs the current instance and waits for it to exit.
func (p *proc) kill(ctx context.Context) error {
	if !p.alive() {
		return nil
	}
	if err := p.signal(syscall.SIGKILL, true); err != nil && p.alive() {
		return err
	}
	return p.waitExit(ctx, 10*time.Second)
}

// waitReady waits until the current instance is ready (its probe passes).
// A start that fails (the instance exits first) is retried after a short
// backoff, a few times, since a child started while NATS restarts (or a
// cluster elects its leaders) may give up at once.
func (p *proc) waitReady(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		done, _ := p.current()
		exited := false
		err := waitFor(ctx, startTimeout, p.name+" ready", func() (bool, error) {
			select {
			case <-done:
				exited = true // no use waiting on
				return true, nil
			default:
			}
			if err := p.ready(ctx); err != nil {
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
			return fmt.Errorf("%s: %w", p.name, err)
		}
		p.mu.Lock()
		p.expected = true
		p.mu.Unlock()
		// A backoff of the retries, not a wait for an event.
		if err := pause(ctx, time.Duration(attempt)*500*time.Millisecond); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if err := p.start(); err != nil {
			return err
		}
	}
}

var errExited = errors.New("the process exited")

// restart starts the process again (it must have exited) and waits for it
// to be ready.
func (p *proc) restart(ctx context.Context) error {
	if err := p.start(); err != nil {
		return err
	}
	return p.waitReady(ctx)
}

// close kills the process, if running, and closes its log file.
func (p *proc) close() {
	_ = p.kill(context.Background())
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logFile != nil {
		p.logMu.Lock()
		p.logFile.Close()
		p.logMu.Unlock()
		p.logFile = nil
	}
}

// freePort returns a loopback TCP port that is free now. The harness
// chooses ports itself so that a restarted process keeps its address.
func freePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// The ports handed out are bound later, by the children: a port
		// freed here can come back from the next call before its process
		// has bound it (a worker's HTTP port was once the NATS port).
		handedMu.Lock()
		taken := handed[port]
		handed[port] = true
		handedMu.Unlock()
		if !taken {
			return port, nil
		}
	}
	return 0, errors.New("free port: every port the system gave was handed out already")
}

var (
	handedMu sync.Mutex
	handed   = map[int]bool{} // ports freePort returned, for this process's life
)

// tcpReady is a readiness probe: addr accepts connections.
func tcpReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// httpReady is a readiness probe: GET url answers 200.
func httpReady(url string) func(context.Context) error {
	client := &http.Client{Timeout: time.Second}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}
