package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// SessionsConfig configures the sessions benchmark.
type SessionsConfig struct {
	// Sessions is the number of sessions, each of which makes
	// RunsPerSession runs, one after another.
	Sessions       int `json:"sessions"`
	RunsPerSession int `json:"runs_per_session"`
	// CallsPerTurn (K) and Turns (T) shape a run: T turns of K tool calls,
	// then an answer; T+1 model calls.
	CallsPerTurn int `json:"calls_per_turn"`
	Turns        int `json:"turns"`
	// Concurrency bounds the runs the driver keeps in flight; 0 sends every
	// session's message at once.
	Concurrency int `json:"concurrency"`
	// Workers and WorkerConcurrency shape the fleet.
	Workers           int `json:"workers"`
	WorkerConcurrency int `json:"worker_concurrency"`
	// Timeout bounds one run, as the driver waits for it.
	Timeout time.Duration `json:"timeout_ns"`
	// Durable runs the benchmark a second time, in the same run, with
	// JetStream input and history on, so that the price of durability per
	// run is a ratio of numbers measured side by side.
	Durable bool `json:"durable"`
}

func (c *SessionsConfig) register(fs *flag.FlagSet) {
	fs.IntVar(&c.Sessions, "sessions", 1000, "sessions")
	fs.IntVar(&c.RunsPerSession, "runs-per-session", 1, "runs each session makes, one after another")
	fs.IntVar(&c.CallsPerTurn, "calls-per-turn", 1, "tool calls the model asks for in each turn (K)")
	fs.IntVar(&c.Turns, "turns", 2, "turns with tool calls before the model answers (T)")
	fs.IntVar(&c.Concurrency, "concurrency", 256, "runs the driver keeps in flight; 0 sends every session's message at once")
	fs.IntVar(&c.Workers, "workers", 1, "worker processes")
	fs.IntVar(&c.WorkerConcurrency, "worker-concurrency", 256, "concurrency limit of every worker")
	fs.DurationVar(&c.Timeout, "timeout", 2*time.Minute, "bound of one run, as the driver waits for its answer")
	fs.BoolVar(&c.Durable, "durable", false, "run it again with JetStream input and history on (an embedded server with JetStream), and compare")
}

func (c *SessionsConfig) check() error {
	switch {
	case c.Sessions < 2:
		return fmt.Errorf("--sessions %d: must be at least 2", c.Sessions)
	case c.RunsPerSession < 1:
		return fmt.Errorf("--runs-per-session %d: must be at least 1", c.RunsPerSession)
	case c.CallsPerTurn < 0:
		return fmt.Errorf("--calls-per-turn %d: must not be negative", c.CallsPerTurn)
	case c.Turns < 0:
		return fmt.Errorf("--turns %d: must not be negative", c.Turns)
	case c.Concurrency < 0:
		return fmt.Errorf("--concurrency %d: must not be negative", c.Concurrency)
	case c.Workers < 1:
		return fmt.Errorf("--workers %d: must be at least 1", c.Workers)
	case c.WorkerConcurrency < 1:
		return fmt.Errorf("--worker-concurrency %d: must be at least 1", c.WorkerConcurrency)
	case c.Timeout <= 0:
		return fmt.Errorf("--timeout %v: must be positive", c.Timeout)
	}
	return nil
}

// SessionsReport is the result of the sessions benchmark.
type SessionsReport struct {
	Benchmark string         `json:"benchmark"`
	Machine   Machine        `json:"machine"`
	Config    SessionsConfig `json:"config"`
	// Sync is the embedded server's sync policy (--sync) of a durable
	// round: "always" or an interval.
	Sync string `json:"sync,omitempty"`
	// Runs completed, and how long they took from the first message to the
	// last answer (memory measurements excluded).
	Runs        int     `json:"runs"`
	Seconds     float64 `json:"seconds"`
	RunsPerSec  float64 `json:"runs_per_sec"`
	ToolCalls   int     `json:"tool_calls"`
	CallsPerSec float64 `json:"tool_calls_per_sec"`
	ModelCalls  int     `json:"model_calls"`
	RunLatency  Latency `json:"run_latency"`
	// UnloadedRunLatency is of runs asked one after another once the
	// measurements above are taken (probeLatency).
	UnloadedRunLatency Latency `json:"unloaded_run_latency"`
	BusyRefusals       uint64  `json:"worker_busy_refusals"`
	// CPU per run while the runs were driven: this process (orchestrator,
	// driver and, with the embedded server, the NATS server) and the worker
	// processes, in microseconds.
	CPUPerRunSelf    float64 `json:"cpu_per_run_self_us"`
	CPUPerRunWorkers float64 `json:"cpu_per_run_workers_us"`
	// What this process allocated per run, in bytes and objects, and the
	// CPU its garbage collector spent per run, in microseconds (part of
	// CPUPerRunSelf; runtime/metrics, an estimate of the runtime's).
	AllocBytesPerRun   float64 `json:"alloc_bytes_per_run"`
	AllocObjectsPerRun float64 `json:"alloc_objects_per_run"`
	GCCPUPerRun        float64 `json:"gc_cpu_per_run_us"`
	// CPUPerRunServer is the NATS server child's CPU per run, in
	// microseconds (--server process only; ServerCPU says it was measured).
	CPUPerRunServer float64 `json:"cpu_per_run_server_us,omitempty"`
	ServerCPU       bool    `json:"server_cpu_measured"`
	// Memory of this process (orchestrator, driver and, unless --nats-url
	// was given, the NATS server) after a GC, before any session, after
	// half of them ran and after all ran and went idle.
	Before Mem `json:"before"`
	Half   Mem `json:"half"`
	After  Mem `json:"after"`
	// Per idle session: the growth from before to after over all
	// sessions, and the marginal growth over the second half.
	HeapPerSession         float64  `json:"heap_per_session_bytes"`
	HeapPerSessionMarginal float64  `json:"heap_per_session_marginal_bytes"`
	RSSPerSession          float64  `json:"rss_per_session_bytes"`
	RSSPerSessionMarginal  float64  `json:"rss_per_session_marginal_bytes"`
	SessionsHeld           int      `json:"sessions_held"`
	Targets                []Target `json:"targets"`

	// Server is the NATS server child's memory (--server process only).
	Server *ServerMem `json:"server,omitempty"`
	// Durable is the same benchmark with JetStream input and history, run
	// right after this one (--durable).
	Durable *SessionsReport `json:"durable,omitempty"`
	// DurableRatio compares the two rounds (--durable).
	DurableRatio *DurableRatio `json:"durable_ratio,omitempty"`
}

// Mem is a snapshot of the process's memory.
type Mem struct {
	HeapAlloc  uint64 `json:"heap_alloc_bytes"`
	HeapInuse  uint64 `json:"heap_inuse_bytes"`
	RSS        uint64 `json:"rss_bytes"`
	Goroutines int    `json:"goroutines"`
}

// measureMem collects garbage, returns freed memory to the OS, and reads
// the heap and the resident set size.
func measureMem() Mem {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Mem{HeapAlloc: ms.HeapAlloc, HeapInuse: ms.HeapInuse, RSS: readRSS(), Goroutines: runtime.NumGoroutine()}
}

// readRSS returns VmRSS from /proc/self/status, in bytes; 0 where there is
// no such file.
func readRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// scriptedModel answers at once: K calls of bench_echo per turn for T turns,
// then "done". It keeps no state: the turn is the number of assistant
// messages since the last user message.
type scriptedModel struct {
	calls, turns int
}

func (s scriptedModel) Complete(_ context.Context, req *loop.Request, _ loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	turn := 0
	for _, m := range slices.Backward(req.Messages) {
		if _, ok := m.(*agentfleet.UserMessage); ok {
			break
		}
		if _, ok := m.(*agentfleet.AssistantMessage); ok {
			turn++
		}
	}
	if turn >= s.turns {
		return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text("done")}, Model: "scripted", StopReason: agentfleet.StopReasonStop}, nil
	}
	m := &agentfleet.AssistantMessage{Model: "scripted", StopReason: agentfleet.StopReasonToolUse}
	for i := range s.calls {
		// Call ids are unique across sessions, as a real model's are.
		id := fmt.Sprintf("%s_t%d_c%d", req.Session, turn, i)
		m.Content = append(m.Content, agentfleet.Content{
			Type: agentfleet.ContentToolCall, ID: id, Name: toolEcho,
			Arguments: json.RawMessage(`{"text":"` + id + `"}`),
		})
	}
	return m, nil
}

const sessionsAgent = "bench"

func sessionName(i int) string { return fmt.Sprintf("s%06d", i) }

func (m *Main) runSessions(ctx context.Context) (_ report, err error) {
	c := m.Sessions
	var children []*child
	defer func() { err = errors.Join(err, stopChildren(children)) }()
	var names []string
	for i := range c.Workers {
		name := fmt.Sprintf("sessions-%d", i+1)
		ch, err := m.startChild(ctx, name, cmdWorker, "--name", name, "--concurrency", strconv.Itoa(c.WorkerConcurrency))
		if err != nil {
			return nil, err
		}
		children = append(children, ch)
		names = append(names, name)
	}
	rep, err := m.labeledRound(ctx, children, names, false)
	if err != nil || !c.Durable {
		return rep, err
	}
	if rep.Durable, err = m.labeledRound(ctx, children, names, true); err != nil {
		return nil, err
	}
	rep.DurableRatio = durableRatio(rep, rep.Durable, m.Server == serverExternal)
	return rep, nil
}

// labeledRound runs sessionsRound with the profiler label round=memory or
// round=durable, which every goroutine the round starts (the orchestrator's,
// its connections' readers) inherits: with --profile-dir,
// go tool pprof -tagfocus round=durable shows one round alone.
func (m *Main) labeledRound(ctx context.Context, children []*child, names []string, durable bool) (rep *SessionsReport, err error) {
	round := "memory"
	if durable {
		round = "durable"
	}
	pprof.Do(ctx, pprof.Labels("round", round), func(ctx context.Context) {
		rep, err = m.sessionsRound(ctx, children, names, durable)
	})
	return rep, err
}

// sessionsRound runs the benchmark once on a new orchestrator, durable or
// not, with the workers given.
func (m *Main) sessionsRound(ctx context.Context, children []*child, names []string, durable bool) (_ *SessionsReport, err error) {
	c := m.Sessions
	onc, err := m.connect("fleetbench-orchestrator")
	if err != nil {
		return nil, err
	}
	defer onc.Close()
	dnc, err := m.connect("fleetbench-driver")
	if err != nil {
		return nil, err
	}
	defer dnc.Close()

	orch, err := orchestrator.New(onc, orchestrator.Config{
		Durable: durable,
		Model:   scriptedModel{calls: c.CallsPerTurn, turns: c.Turns},
		Profiles: []orchestrator.Profile{{
			Name: sessionsAgent, Tools: []string{toolEcho}, Mode: "parallel", MaxTurns: c.Turns + 1,
		}},
		Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond},
		Logger:    m.logger,
	})
	if err != nil {
		return nil, err
	}
	if err := orch.Start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = errors.Join(err, orch.Close(cctx))
	}()
	if err := waitForTool(ctx, orch, toolEcho); err != nil {
		return nil, err
	}

	rep := &SessionsReport{Benchmark: cmdSessions, Machine: m.machine(), Config: c}
	rep.Config.Durable = durable
	if durable {
		rep.Sync = m.Sync.String()
	}
	rep.Before = measureMem()
	var srv ServerMem
	srv.Before, _ = m.serverRSS()
	half := c.Sessions / 2
	meter, am := cpuMeter{children}, newAllocMeter()
	self0, workers0 := meter.read()
	a0 := am.read()
	srv0, _ := m.serverCPU()
	lat1, d1, err := m.drive(ctx, dnc, orch, 0, half)
	if err != nil {
		return nil, err
	}
	self1, workers1 := meter.read()
	a1 := am.read()
	srv1, _ := m.serverCPU()
	rep.Half = measureMem()
	srv.Half, _ = m.serverRSS()
	self2, workers2 := meter.read()
	a2 := am.read()
	srv2, _ := m.serverCPU()
	lat2, d2, err := m.drive(ctx, dnc, orch, half, c.Sessions)
	if err != nil {
		return nil, err
	}
	self3, workers3 := meter.read()
	a3 := am.read()
	srv3, serverCPU := m.serverCPU()
	rep.After = measureMem()
	if rss, ok := m.serverRSS(); ok {
		srv.After, rep.Server = rss, &srv
		srv.per(c.Sessions, c.Sessions-half)
	}
	if m.ProfileDir != "" {
		name := "fleetbench-sessions.heap.pprof"
		if durable {
			name = "fleetbench-sessions-durable.heap.pprof"
		}
		if err := writeHeapProfile(filepath.Join(m.ProfileDir, name)); err != nil {
			return nil, err
		}
	}
	runs := float64(c.Sessions * c.RunsPerSession)
	rep.CPUPerRunSelf = us(self1-self0+self3-self2) / runs
	rep.CPUPerRunWorkers = us(workers1-workers0+workers3-workers2) / runs
	allocated := a1.sub(a0).add(a3.sub(a2))
	rep.AllocBytesPerRun, rep.AllocObjectsPerRun = float64(allocated.bytes)/runs, float64(allocated.objects)/runs
	rep.GCCPUPerRun = us(allocated.gc) / runs
	if rep.ServerCPU = serverCPU; serverCPU {
		rep.CPUPerRunServer = us(srv1-srv0+srv3-srv2) / runs
	}
	rep.SessionsHeld = orch.Sessions()

	rep.Runs = len(lat1) + len(lat2)
	rep.Seconds = (d1 + d2).Seconds()
	rep.RunsPerSec = float64(rep.Runs) / rep.Seconds
	rep.ToolCalls = rep.Runs * c.CallsPerTurn * c.Turns
	rep.CallsPerSec = float64(rep.ToolCalls) / rep.Seconds
	rep.ModelCalls = rep.Runs * (c.Turns + 1)
	rep.RunLatency = summarize(append(lat1, lat2...))
	n, n2 := float64(c.Sessions), float64(c.Sessions-half)
	rep.HeapPerSession = (float64(rep.After.HeapAlloc) - float64(rep.Before.HeapAlloc)) / n
	rep.HeapPerSessionMarginal = (float64(rep.After.HeapAlloc) - float64(rep.Half.HeapAlloc)) / n2
	rep.RSSPerSession = (float64(rep.After.RSS) - float64(rep.Before.RSS)) / n
	rep.RSSPerSessionMarginal = (float64(rep.After.RSS) - float64(rep.Half.RSS)) / n2
	if rep.UnloadedRunLatency, err = m.probeLatency(ctx, dnc); err != nil {
		return nil, err
	}
	for _, name := range names {
		st, err := workerStats(dnc, name)
		if err != nil {
			return nil, err
		}
		rep.BusyRefusals += st.Busy
	}
	if !durable {
		rep.Targets = []Target{atMost("heap per idle session (KB)", rep.HeapPerSession/1000, 20, " KB")}
		if c.Sessions >= 10_000 {
			rep.Targets = append(rep.Targets, atLeast("sessions served on one orchestrator", float64(rep.SessionsHeld), 10_000, ""))
		}
	}
	return rep, nil
}

// waitForTool waits until the orchestrator's agent sees the tool.
func waitForTool(ctx context.Context, orch *orchestrator.Orchestrator, name string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		defs, _ := orch.Tools(sessionsAgent)
		for _, d := range defs {
			if d.Name == name {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the orchestrator did not discover %s within 10s", name)
		}
		if err := orch.Fleet().Refresh(ctx); err != nil {
			return err
		}
	}
}

// drive asks RunsPerSession runs of each session in [from, to), at most
// Concurrency at once and the runs of one session one after another, waits
// until every session is idle, and returns the latency of each run and the
// time from the first ask to the last answer.
func (m *Main) drive(ctx context.Context, nc *bus.Conn, orch *orchestrator.Orchestrator, from, to int) ([]time.Duration, time.Duration, error) {
	c := m.Sessions
	conc := c.Concurrency
	if conc == 0 || conc > to-from {
		conc = to - from
	}
	jobs := make(chan int)
	var (
		mu       sync.Mutex
		lats     = make([]time.Duration, 0, (to-from)*c.RunsPerSession)
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for i := range jobs {
				var err error
				for range c.RunsPerSession {
					t0 := time.Now()
					if err = askOnce(nc, sessionName(i), c.Timeout); err != nil {
						break
					}
					d := time.Since(t0)
					mu.Lock()
					lats = append(lats, d)
					mu.Unlock()
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := from; i < to && ctx.Err() == nil; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return nil, 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	// The answer leaves before the session has quite finished its run.
	for i := from; i < to; i++ {
		s, err := orch.Session(sessionsAgent, sessionName(i))
		if err != nil {
			return nil, 0, err
		}
		if err := s.Wait(ctx); err != nil {
			return nil, 0, err
		}
	}
	return lats, elapsed, nil
}

// askOnce asks one run of session and checks its answer.
func askOnce(nc *bus.Conn, session string, timeout time.Duration) error {
	msg, err := nc.Request("agent.ask."+sessionsAgent+"."+session, []byte("go"), timeout)
	if err != nil {
		return fmt.Errorf("ask %s: %w", session, err)
	}
	var a agentfleet.AssistantMessage
	if err := json.Unmarshal(msg.Data, &a); err != nil {
		return fmt.Errorf("ask %s: answer: %w", session, err)
	}
	if a.StopReason != agentfleet.StopReasonStop || agentfleet.JoinText(a.Content) != "done" {
		return fmt.Errorf("ask %s: run ended with %s %q: %s", session, a.StopReason, a.ErrorMessage, agentfleet.JoinText(a.Content))
	}
	return nil
}

func (r *SessionsReport) writeTables(w io.Writer) {
	c := r.Config
	mode := "in memory"
	if c.Durable {
		mode = "durable (JetStream input and history, sync " + r.Sync + ")"
	}
	fmt.Fprintf(w, "fleetbench sessions, %s — %s\n", mode, r.Machine)
	conc := strconv.Itoa(c.Concurrency)
	if c.Concurrency == 0 {
		conc = "all"
	}
	fmt.Fprintf(w, "%d sessions, %d run(s) each: %d turns of %d tool calls, then an answer; zero-latency scripted model; %s sessions driven at once; %d worker process(es) of concurrency %d\n",
		c.Sessions, c.RunsPerSession, c.Turns, c.CallsPerTurn, conc, c.Workers, c.WorkerConcurrency)
	tw := table(w)
	cpuHead, cpu := "CPU/run µs (this + workers)", fmt.Sprintf("%.0f + %.0f", r.CPUPerRunSelf, r.CPUPerRunWorkers)
	if r.ServerCPU {
		cpuHead, cpu = "CPU/run µs (this + workers + NATS server)", cpu+fmt.Sprintf(" + %.0f", r.CPUPerRunServer)
	}
	fmt.Fprintf(tw, "\nruns\tseconds\truns/s\ttool calls/s\tmodel calls/s\trun p50 ms\trun p99 ms\t%s\tbusy refusals\t\n", cpuHead)
	fmt.Fprintf(tw, "%d\t%.2f\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%s\t%d\t\n", r.Runs, r.Seconds, r.RunsPerSec, r.CallsPerSec,
		float64(r.ModelCalls)/r.Seconds, r.RunLatency.P50/1e3, r.RunLatency.P99/1e3, cpu, r.BusyRefusals)
	tw.Flush()
	fmt.Fprintln(w, "\nMemory of the orchestrator's process (after GC)")
	tw = table(w)
	fmt.Fprintln(tw, "when\theap MB\theap in use MB\tRSS MB\tgoroutines\t")
	for _, row := range []struct {
		name string
		m    Mem
	}{{"before", r.Before}, {"half the sessions idle", r.Half}, {"all sessions idle", r.After}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%d\t\n", row.name, mb(row.m.HeapAlloc), mb(row.m.HeapInuse), mb(row.m.RSS), row.m.Goroutines)
	}
	tw.Flush()
	fmt.Fprintf(w, "per idle session (%d held): heap %.1f KB (marginal %.1f KB), RSS %.1f KB (marginal %.1f KB)\n",
		r.SessionsHeld, r.HeapPerSession/1000, r.HeapPerSessionMarginal/1000, r.RSSPerSession/1000, r.RSSPerSessionMarginal/1000)
	if s := r.Server; s != nil {
		fmt.Fprintf(w, "NATS server process: RSS %.1f MB before, %.1f MB after; per idle session %.1f KB (marginal %.1f KB)\n",
			mb(s.Before), mb(s.After), s.RSSPerSession/1000, s.RSSPerSessionMarginal/1000)
	}
	writeTargets(w, r.Targets)
	if d := r.Durable; d != nil {
		fmt.Fprintln(w, "\nThe same with JetStream input and history on (durable), right after:")
		d.writeTables(w)
	}
	if r.DurableRatio != nil {
		r.DurableRatio.writeTables(w)
	}
}

func mb(b uint64) float64 { return float64(b) / 1e6 }
