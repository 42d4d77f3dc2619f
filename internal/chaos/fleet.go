package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fleet is the set of child processes: the NATS server, the orchestrators,
// the toolworkers and the ledger worker.
type fleet struct {
	cfg     *Config
	dir     string
	url     string
	nats    *proc
	orchs   []*proc
	workers []*proc // toolworkers, then the ledger worker
	ledger  *proc

	mu    sync.Mutex
	exits []Exit
}

// Exit is a child process that exited without the harness asking it to
// (an orchestrator that lost the lead, a crash); the harness restarted it.
type Exit struct {
	Process string  `json:"process"`
	AtSec   float64 `json:"at_s"` // since the fleet started
	Error   string  `json:"error"`
}

func newFleet(cfg *Config, dir, modelURL string) (*fleet, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	f := &fleet{cfg: cfg, dir: dir, url: "nats://" + addr}
	f.nats = &proc{
		name: "nats-server", log: filepath.Join(dir, "nats-server.log"),
		argv:  []string{cfg.NATSServer, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", filepath.Join(dir, "jetstream")},
		ready: natsReady(f.url),
	}
	for i := range cfg.Workers {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("toolworker-%d", i+1)
		f.workers = append(f.workers, &proc{
			name: name, log: filepath.Join(dir, name+".log"),
			argv: []string{cfg.Toolworker, "--nats-url", f.url, "--tools", ToolEcho + "," + ToolSleep,
				"--heartbeat", "100ms", "--http", "127.0.0.1:" + strconv.Itoa(port), "--log-level", "warn",
				"--drain-timeout", "1s"},
			ready: httpReady("http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"),
		})
	}
	f.ledger = &proc{
		name: "ledger-worker", log: filepath.Join(dir, "ledger-worker.log"),
		argv: cfg.LedgerCommand, env: append([]string{LedgerEnv + "=" + f.url}, cfg.LedgerEnv...),
		marker: "ready",
	}
	f.ledger.ready = markedReady(f.ledger)
	f.workers = append(f.workers, f.ledger)
	for i := range cfg.Orchestrators {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("orchestrator-%d", i+1)
		f.orchs = append(f.orchs, &proc{
			name: name, log: filepath.Join(dir, name+".log"),
			// Info level: the harness learns which orchestrator is active
			// from its "orchestrator serving" line.
			argv: []string{cfg.Orchestrator, "--nats-url", f.url, "--http", "127.0.0.1:" + strconv.Itoa(port),
				"--log-level", "info", "--workers", "0", "--llm-stream=false", "--max-retry-delay", "1s",
				"--ack-wait", cfg.AckWait.String(), "--leader-ttl", cfg.LeaderTTL.String(),
				"--shutdown-timeout", "500ms", "--data-dir", filepath.Join(dir, name+"-data")},
			env:    []string{"OPENAI_BASE_URL=" + modelURL, "OPENAI_API_KEY=x", "OPENAI_MODEL=chaos"},
			marker: "orchestrator serving", unmarker: "lost the lead",
			ready: httpReady("http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"),
		})
	}
	return f, nil
}

// natsReady is a readiness probe of the NATS server: a client connects and
// JetStream answers.
func natsReady(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.MaxReconnects(0))
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err = js.AccountInfo(actx)
		return err
	}
}

// markedReady is a readiness probe: the process printed its marker.
func markedReady(p *proc) func(context.Context) error {
	return func(context.Context) error {
		if !p.isMarked() {
			return fmt.Errorf("%s has not printed %q", p.name, p.marker)
		}
		return nil
	}
}

// all returns every process, NATS first.
func (f *fleet) all() []*proc {
	ps := []*proc{f.nats}
	ps = append(ps, f.workers...)
	return append(ps, f.orchs...)
}

// start starts NATS, the workers, then the orchestrators, and waits until
// each is ready and one orchestrator serves.
func (f *fleet) start(ctx context.Context) error {
	if err := f.nats.restart(ctx); err != nil {
		return err
	}
	for _, group := range [][]*proc{f.workers, f.orchs} {
		for _, p := range group {
			if err := p.start(); err != nil {
				return err
			}
		}
		for _, p := range group {
			if err := p.waitReady(ctx); err != nil {
				return err
			}
		}
	}
	return f.waitLeader(ctx)
}

// leader returns the orchestrator that serves input, nil if none does now.
func (f *fleet) leader() *proc {
	for _, p := range f.orchs {
		if p.isMarked() {
			return p
		}
	}
	return nil
}

// waitLeader waits until an orchestrator serves.
func (f *fleet) waitLeader(ctx context.Context) error {
	timeout := startTimeout + 3*f.cfg.LeaderTTL
	return waitFor(ctx, timeout, "an active orchestrator", func() (bool, error) {
		return f.leader() != nil, nil
	})
}

// waitAllReady waits until every process is ready again (after NATS came
// back, clients must have reconnected) and an orchestrator serves.
func (f *fleet) waitAllReady(ctx context.Context) error {
	for _, p := range f.all() {
		if err := p.waitReady(ctx); err != nil {
			return err
		}
	}
	return f.waitLeader(ctx)
}

// supervise restarts every process that exited without the harness asking
// it to, and records it.
func (f *fleet) supervise(ctx context.Context, since time.Time) error {
	for _, p := range f.all() {
		gone, err := p.unexpectedExit()
		if !gone {
			continue
		}
		msg := "exit 0"
		if err != nil {
			msg = err.Error()
		}
		f.mu.Lock()
		f.exits = append(f.exits, Exit{Process: p.name, AtSec: time.Since(since).Seconds(), Error: msg})
		f.mu.Unlock()
		f.cfg.Logf("chaos: %s exited on its own (%s); restarting it", p.name, msg)
		if err := p.restart(ctx); err != nil {
			return err
		}
	}
	return nil
}

// close kills every process, orchestrators first.
func (f *fleet) close() {
	for _, p := range f.orchs {
		p.close()
	}
	for _, p := range f.workers {
		p.close()
	}
	f.nats.close()
}
