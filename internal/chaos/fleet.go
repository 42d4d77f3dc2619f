package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos/ledger"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
	"github.com/agentfleet/agentfleet/internal/chaos/netproxy"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go/jetstream"
)

// fleet is the set of child processes: the NATS servers, the
// orchestrators, the toolworkers and the ledger worker.
type fleet struct {
	cfg   *Config
	dir   string
	url   string // every node's client URL, comma-separated
	nodes []*natsNode
	orchs []*proc.Proc
	// links are the fault proxies of each orchestrator, one per NATS
	// server: every orchestrator reaches NATS through its own.
	links   [][]*netproxy.Proxy
	workers []*proc.Proc // toolworkers, then the ledger worker
	ledger  *proc.Proc
	// js is the harness's own JetStream connection (set by Run once the
	// fleet started), through which faults look at the cluster.
	js jetstream.JetStream
	// since is the zero of the times of the exits waitServing records:
	// when the fleet started, then when the load began.
	since time.Time

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
	nodes, err := newNodes(cfg, dir, cfg.NATSNodes)
	if err != nil {
		return nil, err
	}
	f := &fleet{cfg: cfg, dir: dir, url: clientURL(nodes), nodes: nodes}
	orchFlags, err := orchestratorFlags(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Delegate || cfg.HistoryMaxRecords > 0 {
		// Every tool for both agents, helper as a tool of default, and
		// default's history bounded.
		file := filepath.Join(dir, "agents.yaml")
		profiles := "agents:\n  - name: " + agentName + "\n"
		if cfg.Delegate {
			profiles += "    agents: [" + model.Child + "]\n"
		}
		if cfg.HistoryMaxRecords > 0 {
			profiles += fmt.Sprintf("    history: {max_records: %d}\n", cfg.HistoryMaxRecords)
		}
		if cfg.Delegate {
			profiles += "  - name: " + model.Child + "\n"
		}
		if err := os.WriteFile(file, []byte(profiles), 0o644); err != nil {
			return nil, err
		}
		orchFlags = append(orchFlags, "--config", file)
	}
	for i := range cfg.Workers {
		port, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("toolworker-%d", i+1)
		f.workers = append(f.workers, &proc.Proc{
			Name: name, Log: filepath.Join(dir, name+".log"),
			Argv: []string{cfg.Toolworker, "--nats-url", f.url, "--tools", model.ToolEcho + "," + model.ToolSleep,
				"--heartbeat", "100ms", "--http", "127.0.0.1:" + strconv.Itoa(port), "--log-level", "warn",
				"--drain-timeout", "1s"},
			Env:   traceEnv(cfg),
			Ready: proc.HTTPReady("http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"),
		})
	}
	f.ledger = &proc.Proc{
		Name: "ledger-worker", Log: filepath.Join(dir, "ledger-worker.log"),
		Argv:   cfg.LedgerCommand,
		Env:    append([]string{ledger.Env + "=" + f.url, ledger.ReplicasEnv + "=" + strconv.Itoa(cfg.NATSNodes)}, cfg.LedgerEnv...),
		Marker: "ready",
	}
	f.ledger.Ready = markedReady(f.ledger)
	f.workers = append(f.workers, f.ledger)
	for i := range cfg.Orchestrators {
		port, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("orchestrator-%d", i+1)
		upstreams := make([]string, len(nodes))
		for j, n := range nodes {
			upstreams[j] = n.url
		}
		links, urls, err := netproxy.ListenAll(upstreams, cfg.Seed*31+uint64(i))
		url := strings.Join(urls, ",")
		if err != nil {
			f.close()
			return nil, err
		}
		f.links = append(f.links, links)
		f.orchs = append(f.orchs, &proc.Proc{
			Name: name, Log: filepath.Join(dir, name+".log"),
			// Info level: the harness learns which orchestrators serve from
			// their "orchestrator serving" line.
			Argv: append([]string{cfg.Orchestrator, "--nats-url", url, "--http", "127.0.0.1:" + strconv.Itoa(port),
				"--log-level", "info", "--workers", "0", "--llm-stream=false", "--max-retry-delay", "1s",
				"--ack-wait", cfg.AckWait.String(), "--stream-replicas", strconv.Itoa(cfg.NATSNodes),
				"--shutdown-timeout", "500ms"}, orchFlags...),
			Env:    append([]string{"OPENAI_BASE_URL=" + modelURL, "OPENAI_API_KEY=x", "OPENAI_MODEL=chaos"}, traceEnv(cfg)...),
			Marker: "orchestrator serving", Unmarker: "lost the lead",
			Ready: proc.HTTPReady("http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"),
		})
	}
	return f, nil
}

// markedReady is a readiness probe: the process printed its marker.
func markedReady(p *proc.Proc) func(context.Context) error {
	return func(context.Context) error {
		if !p.IsMarked() {
			return fmt.Errorf("%s has not printed %q", p.Name, p.Marker)
		}
		return nil
	}
}

// all returns every process, NATS first.
func (f *fleet) all() []*proc.Proc {
	ps := f.natsProcs()
	ps = append(ps, f.workers...)
	return append(ps, f.orchs...)
}

// natsProcs returns the processes of the NATS servers.
func (f *fleet) natsProcs() []*proc.Proc {
	ps := make([]*proc.Proc, len(f.nodes))
	for i, n := range f.nodes {
		ps[i] = n.Proc
	}
	return ps
}

// start starts NATS, the workers, then the orchestrators, and waits until
// each is ready (the NATS cluster as a whole too) and an orchestrator
// serves. The servers of a cluster start together: none is ready before
// they elect a meta leader.
func (f *fleet) start(ctx context.Context) error {
	f.since = time.Now()
	for i, group := range [][]*proc.Proc{f.natsProcs(), f.workers, f.orchs} {
		for _, p := range group {
			if err := p.Start(); err != nil {
				return err
			}
		}
		for _, p := range group {
			if err := p.WaitReady(ctx); err != nil {
				return err
			}
		}
		if i == 0 {
			if err := f.waitCluster(ctx); err != nil {
				return err
			}
		}
	}
	return f.waitServing(ctx)
}

// serving returns the orchestrators that serve input now: those whose
// running instance printed "orchestrator serving" (and, with an elected
// active orchestrator, did not lose the lead since). The harness does not
// assume how many do: one active of several, or all of them over
// partitions of the sessions.
func (f *fleet) serving() []*proc.Proc {
	var ps []*proc.Proc
	for _, p := range f.orchs {
		if p.IsMarked() {
			ps = append(ps, p)
		}
	}
	return ps
}

// waitServing waits until an orchestrator serves, restarting (and
// recording) the processes that exit meanwhile: an orchestrator may be
// ready, then fail to set up its streams and exit.
func (f *fleet) waitServing(ctx context.Context) error {
	timeout := proc.StartTimeout + 3*f.cfg.ttl()
	return proc.WaitFor(ctx, timeout, "a serving orchestrator", func() (bool, error) {
		if err := f.supervise(ctx, f.since); err != nil {
			return false, err
		}
		return len(f.serving()) > 0, nil
	})
}

// waitAllReady waits until every process is ready again (after NATS came
// back, clients must have reconnected), the NATS cluster too, and an
// orchestrator serves.
func (f *fleet) waitAllReady(ctx context.Context) error {
	for _, p := range f.all() {
		if err := p.WaitReady(ctx); err != nil {
			return err
		}
	}
	if err := f.waitCluster(ctx); err != nil {
		return err
	}
	return f.waitServing(ctx)
}

// supervise restarts every process that exited without the harness asking
// it to, and records it.
func (f *fleet) supervise(ctx context.Context, since time.Time) error {
	for _, p := range f.all() {
		gone, err := p.UnexpectedExit()
		if !gone {
			continue
		}
		msg := "exit 0"
		if err != nil {
			msg = err.Error()
		}
		f.mu.Lock()
		f.exits = append(f.exits, Exit{Process: p.Name, AtSec: time.Since(since).Seconds(), Error: msg})
		f.mu.Unlock()
		f.cfg.Logf("chaos: %s exited on its own (%s); restarting it", p.Name, msg)
		if err := p.Restart(ctx); err != nil {
			return err
		}
	}
	return nil
}

// close kills every process, orchestrators first.
func (f *fleet) close() {
	for _, p := range f.orchs {
		p.Close()
	}
	for _, p := range f.workers {
		p.Close()
	}
	for _, n := range f.nodes {
		n.Close()
	}
	for _, ls := range f.links {
		for _, p := range ls {
			p.Close()
		}
	}
}

// orchestratorFlags returns the orchestrators' flags that depend on their
// version: --leader-ttl (an elected active orchestrator) and --lease-ttl
// (partitions leased by every orchestrator), each given only when
// "orchestrator --help" lists it.
func orchestratorFlags(cfg *Config) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// --help exits 0 or 2 by version; only the usage matters.
	out, _ := exec.CommandContext(ctx, cfg.Orchestrator, "--help").CombinedOutput()
	if !strings.Contains(string(out), "-nats-url") {
		return nil, fmt.Errorf("chaos: %s --help does not list --nats-url:\n%s", cfg.Orchestrator, out)
	}
	var flags []string
	if strings.Contains(string(out), "-leader-ttl") {
		flags = append(flags, "--leader-ttl", cfg.LeaderTTL.String())
	}
	if strings.Contains(string(out), "-lease-ttl") {
		flags = append(flags, "--lease-ttl", cfg.LeaseTTL.String())
	}
	return flags, nil
}

// traceEnv is the environment that has a process export its traces to
// cfg.TraceEndpoint, or none.
func traceEnv(cfg *Config) []string {
	if cfg.TraceEndpoint == "" {
		return nil
	}
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + cfg.TraceEndpoint, "OTEL_BSP_SCHEDULE_DELAY=100"}
}
