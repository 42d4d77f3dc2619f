// Package chaos is a seeded fault-injection harness for agentfleet. It runs
// the real programs as child processes on 127.0.0.1 (a nats-server with
// JetStream, or a cluster of three, one to three orchestrators, tool
// workers, and a ledger worker of its own), a deterministic model, and a load of user messages over many
// sessions, while it kills, stops and restarts those processes on a seeded
// schedule. Then it waits for the fleet to settle and checks what is STORED:
// the session histories of AGENT_HISTORY and the executions the ledger tool
// recorded, and reports every violation of the durability guarantees of
// docs/DESIGN.md, by class, with examples.
//
// Every random choice comes from math/rand/v2 seeded with Config.Seed, so a
// seed names a plan: the messages, their gaps and duplicates, and the faults
// with their times and targets. (What the processes do with them depends on
// timing, as crashes do.)
//
// The harness is split by concern: internal/chaos/proc supervises the child
// processes, internal/chaos/model is the model, internal/chaos/check checks
// the plan against what was stored, internal/chaos/observe follows the
// partitions' owners and the runs' events. This package plans the load
// and the faults, drives the fleet and reads the streams back; it and
// observe are the packages of the harness that import the NATS client
// (and internal/bus).
package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go/jetstream"
)

// Config configures one run of the harness. Its zero value means the
// documented defaults, except that the binaries must be found (BinDir or
// the paths) and LedgerCommand must name a program that calls
// ledger.ChildMain.
type Config struct {
	// Seed chooses the plan; default 1.
	Seed uint64
	// Sessions is the number of sessions (s00, s01, ...); default 16.
	Sessions int
	// Messages is the number of distinct user messages, spread over the
	// sessions; default 80.
	Messages int
	// Duration is how long the load is spread over; default 15s. The whole
	// run is bounded by Duration + Quiesce + a minute for starting and
	// checking.
	Duration time.Duration
	// Quiesce bounds the wait, after the load, for every message to have a
	// run that ended; default 60s.
	Quiesce time.Duration
	// Faults is the number of faults injected during the load; default 6,
	// negative for none.
	Faults int
	// FaultKinds are the kinds to choose from; default all of them that
	// apply (FaultPause with two orchestrators or more, FaultKillNATSLeader
	// with a cluster).
	FaultKinds []FaultKind
	// NetFaults adds FaultBlackhole and FaultSlow to the default kinds.
	NetFaults bool
	// Hog runs a CPU hog, a busy child process per core, from the start
	// of the load to the end of the run.
	Hog bool
	// Delegate gives agent default agent helper as a tool (model.ToolAsk),
	// which the model asks for about one message in four; the check then
	// reads helper's sessions too (check.Findings.VerifyDelegation).
	Delegate bool
	// Erase is the number of sessions the load deletes (x00, x01, ...) on
	// agent.delete.<agent>.<session> while the faults go on, each with
	// messages before its delete and one after it; the check then finds
	// nothing of before the delete in any stream
	// (check.Findings.VerifyErased). Default 0.
	Erase int
	// HistoryMaxRecords > 0 bounds the history of agent default's
	// sessions (its profile's history: {max_records}); the check then
	// reads what a load of each session sees (check.Visible), the messages
	// from the first one kept (check.Kept), and each session within its
	// bound (check.Findings.VerifyBound). Default 0, unbounded.
	HistoryMaxRecords int
	// NATSNodes is 1, one nats-server, or 3, a JetStream cluster on
	// loopback whose streams the orchestrators replicate on every node;
	// default 1.
	NATSNodes int
	// Orchestrators is 1 to 3; default 1. The harness does not assume
	// which of them serve (one elected, or all over partitions).
	Orchestrators int
	// Workers is the number of toolworker processes (echo, sleep); default 2.
	Workers int
	// DuplicateRate is the share of messages sent twice; default 0.1.
	// Negative sends none.
	DuplicateRate float64
	// ModelFailEvery K > 0 makes the model fail the first attempt of about
	// one request in K with HTTP 500; default 0, never.
	ModelFailEvery int
	// AckWait is given to the orchestrators, and LeaderTTL (--leader-ttl)
	// and LeaseTTL (--lease-ttl) to those whose --help lists the flag;
	// default 2s each.
	AckWait, LeaderTTL, LeaseTTL time.Duration

	// BinDir holds nats-server, orchestrator and toolworker (BuildBinaries
	// makes them); NATSServer, Orchestrator and Toolworker override single
	// paths.
	BinDir                               string
	NATSServer, Orchestrator, Toolworker string
	// LedgerCommand is the command line of the ledger worker: a program
	// that calls ledger.ChildMain (the harness sets ledger.Env), with
	// ledger.Env +extra environment. Default: this program, with no arguments.
	LedgerCommand []string
	LedgerEnv     []string

	// WorkDir receives the NATS store and the children's logs; default a
	// new temporary directory, removed at the end unless KeepWorkDir (or
	// the run found violations or failed).
	WorkDir     string
	KeepWorkDir bool
	// Logf, if set, receives progress lines.
	Logf func(format string, args ...any)
	// TraceEndpoint, if set, is the OTLP/HTTP endpoint the orchestrators
	// and tool workers export their traces to; Report.StoredRuns then
	// says what the spans must agree with.
	TraceEndpoint string
}

func (c *Config) defaults() error {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Sessions <= 0 {
		c.Sessions = 16
	}
	if c.Messages <= 0 {
		c.Messages = 80
	}
	if c.Duration <= 0 {
		c.Duration = 15 * time.Second
	}
	if c.Quiesce <= 0 {
		c.Quiesce = 60 * time.Second
	}
	if c.Faults == 0 {
		c.Faults = 6
	}
	if c.Orchestrators <= 0 {
		c.Orchestrators = 1
	}
	if c.Orchestrators > 3 {
		return fmt.Errorf("chaos: Orchestrators %d: want 1 to 3", c.Orchestrators)
	}
	if c.NATSNodes <= 0 {
		c.NATSNodes = 1
	}
	if c.NATSNodes != 1 && c.NATSNodes != 3 {
		return fmt.Errorf("chaos: NATSNodes %d: want 1 or 3", c.NATSNodes)
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.DuplicateRate == 0 {
		c.DuplicateRate = 0.1
	}
	if c.AckWait <= 0 {
		c.AckWait = 2 * time.Second
	}
	if c.LeaderTTL <= 0 {
		c.LeaderTTL = 2 * time.Second
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 2 * time.Second
	}
	if len(c.FaultKinds) == 0 {
		c.FaultKinds = []FaultKind{FaultKillWorker, FaultKillOrchestrator, FaultTermOrchestrator, FaultKillNATS}
		if c.Orchestrators >= 2 {
			c.FaultKinds = append(c.FaultKinds, FaultPause)
		}
		if c.NATSNodes > 1 {
			c.FaultKinds = append(c.FaultKinds, FaultKillNATSLeader)
		}
		if c.NetFaults {
			c.FaultKinds = append(c.FaultKinds, FaultBlackhole, FaultSlow)
		}
	}
	for _, k := range c.FaultKinds {
		if !k.valid() {
			return fmt.Errorf("chaos: unknown fault kind %q", k)
		}
		if k == FaultPause && c.Orchestrators < 2 {
			return fmt.Errorf("chaos: fault %s needs two orchestrators or more", k)
		}
		if k == FaultKillNATSLeader && c.NATSNodes < 2 {
			return fmt.Errorf("chaos: fault %s needs a NATS cluster (NATSNodes 3)", k)
		}
	}
	bin := func(p *string, name string) error {
		if *p == "" {
			if c.BinDir == "" {
				return fmt.Errorf("chaos: no path to %s: set BinDir (see BuildBinaries)", name)
			}
			*p = filepath.Join(c.BinDir, name)
		}
		if _, err := os.Stat(*p); err != nil {
			return fmt.Errorf("chaos: %s: %w", name, err)
		}
		return nil
	}
	if err := errors.Join(bin(&c.NATSServer, "nats-server"), bin(&c.Orchestrator, "orchestrator"), bin(&c.Toolworker, "toolworker")); err != nil {
		return err
	}
	if len(c.LedgerCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("chaos: ledger worker: %w", err)
		}
		c.LedgerCommand = []string{exe}
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return nil
}

// ttl is how long a dead orchestrator may keep its sessions (its lease of
// partitions, or the lead) before another takes them over.
func (c *Config) ttl() time.Duration { return max(c.LeaseTTL, c.LeaderTTL) }

// Run runs the harness once: it starts the fleet, drives the load while it
// injects the faults, waits for the fleet to settle, checks the stored
// state and returns the report. The error is for the harness itself failing
// (a process that does not start, a store that cannot be read); violations
// of the guarantees are in the report. Every child is killed before Run
// returns.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	bound := cfg.Duration + cfg.Quiesce + time.Minute + time.Duration(cfg.Faults)*5*time.Second
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	began := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6368616f73)) // "chaos"
	plan := newPlan(&cfg, rng)
	faults := scheduleFaults(&cfg, rng)
	erased := newErasePlan(&cfg, rng)

	dir := cfg.WorkDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", fmt.Sprintf("chaos-%d-", cfg.Seed)); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		defer func() {
			if !cfg.KeepWorkDir && err == nil && rep != nil && rep.Total() == 0 {
				os.RemoveAll(dir)
			} else if rep != nil {
				rep.WorkDir = dir
			}
		}()
	}
	cfg.Logf("chaos: seed %d: %d messages over %d sessions in %v, %d faults, %d orchestrator(s), %d NATS node(s); work dir %s",
		cfg.Seed, cfg.Messages, cfg.Sessions, cfg.Duration, len(faults), cfg.Orchestrators, cfg.NATSNodes, dir)

	mdl, err := model.Start(cfg.ModelFailEvery)
	if err != nil {
		return nil, err
	}
	defer mdl.Close()
	fl, err := newFleet(&cfg, dir, mdl.BaseURL())
	if err != nil {
		return nil, err
	}
	defer fl.close()
	if err := fl.start(ctx); err != nil {
		return nil, fmt.Errorf("chaos: starting the fleet: %w", err)
	}
	nc, err := bus.Connect(bus.ConnectConfig{URL: fl.url, Name: "chaos-harness", Logger: quietLogger()})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	fl.js = js
	if err := proc.WaitFor(ctx, proc.StartTimeout, "the input stream", func() (bool, error) {
		_, err := js.Stream(ctx, inputStream)
		return err == nil, err
	}); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	cfg.Logf("chaos: fleet ready after %v", time.Since(began).Round(time.Millisecond))

	if cfg.Hog {
		stopHog, err := proc.StartHog()
		if err != nil {
			return nil, err
		}
		defer stopHog()
		cfg.Logf("chaos: CPU hog on %d cores", runtime.NumCPU())
	}
	loadStart := time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	pubDone := make(chan error, 1)
	go func() { pubDone <- publish(loadCtx, js, plan, cfg.Logf) }()
	var deleted map[string]bool
	eraseDone := make(chan error, 1)
	go func() {
		var err error
		deleted, err = runErase(loadCtx, nc, js, erased, cfg.Logf)
		eraseDone <- err
	}()
	injected, ferr := fl.inject(ctx, faults, loadStart)
	if ferr != nil {
		stopLoad()
		<-pubDone
		<-eraseDone
		return nil, fmt.Errorf("chaos: injecting faults: %w", ferr)
	}
	if err := <-pubDone; err != nil {
		return nil, fmt.Errorf("chaos: publishing: %w", err)
	}
	if err := <-eraseDone; err != nil {
		return nil, fmt.Errorf("chaos: deleting: %w", err)
	}
	loadEnd := time.Now()
	cfg.Logf("chaos: load published in %v with %d faults; quiescing", loadEnd.Sub(loadStart).Round(time.Millisecond), len(injected))

	quiesced, qerr := fl.quiesce(ctx, js, plan, cfg.Quiesce)
	if qerr != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("chaos: quiescing: %w", qerr)
	}
	if len(erased) > 0 && qerr == nil {
		if err := fl.quiesceErased(ctx, js, erased, deleted, cfg.Quiesce); err != nil {
			qerr = err
			quiesced = false
		}
	}
	hist, err := retryRead(ctx, func() ([]*check.Record, error) { return readHistory(ctx, js) })
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	erasedState, err := retryRead(ctx, func() (map[string]*check.ErasedState, error) { return readErased(ctx, js, erased, deleted, hist) })
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	checked := plan
	if len(erased) > 0 {
		checked = &check.Plan{Sessions: slices.Clone(plan.Sessions)}
		for _, e := range erased {
			if deleted[e.Name] {
				checked.Sessions = append(checked.Sessions, check.ErasedSessionPlan(e))
			}
		}
	}
	ledger, err := retryRead(ctx, func() ([]check.LedgerRecord, error) { return readLedger(ctx, js) })
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	checkedHist := check.Visible(splitErased(erased, hist))
	var dropped int
	if cfg.HistoryMaxRecords > 0 {
		checked, dropped = check.Kept(checked, checkedHist)
	}
	rep = &Report{Findings: check.Verify(checked, checkedHist, ledger)}
	if cfg.HistoryMaxRecords > 0 {
		rep.VerifyBound(checkedHist, cfg.HistoryMaxRecords, 4*cfg.AckWait)
		cfg.Logf("chaos: retention: %d messages' runs dropped, %d records kept of %d stored", dropped, len(checkedHist), len(hist))
	}
	if len(erased) > 0 {
		rep.VerifyErased(erased, erasedState)
	}
	if cfg.Delegate {
		children, err := retryRead(ctx, func() ([]*check.Record, error) { return readHistoryOf(ctx, js, model.Child) })
		if err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		rep.VerifyDelegation(checkedHist, children)
	}
	rep.Seed = cfg.Seed
	rep.Config = summary(&cfg)
	rep.Quiesced = quiesced
	if qerr != nil {
		rep.QuiesceError = qerr.Error()
	}
	fl.linkThroughput(injected, hist, loadStart)
	rep.Faults = injected
	rep.StoredRuns = check.StoredRuns(hist)
	rep.recoveries(hist)
	rep.UnknownOutcomes = unknownOutcomes(hist)
	rep.Exits = fl.exits
	rep.ModelRequests, rep.ModelFailures = mdl.Counts()
	rep.LoadSeconds = loadEnd.Sub(loadStart).Seconds()
	rep.Seconds = time.Since(began).Seconds()
	cfg.Logf("chaos: seed %d: %d violations in %.1fs", cfg.Seed, rep.Total(), rep.Seconds)
	return rep, nil
}

// inputStream is the orchestrators' durable input stream (prefix "agent"),
// bus.Subjects.StreamName("INPUT").
const inputStream = "AGENT_INPUT"

// historyStream is the stream of session histories,
// bus.Subjects.StreamName("HISTORY").
const historyStream = "AGENT_HISTORY"

// agentName is the agent profile every session uses.
const agentName = "default"

func subjectIn(session string) string { return "agent.in." + agentName + "." + session }

// quietLogger is the logger of the harness's own NATS connection:
// disconnections during a NATS restart are expected, so it drops them.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
