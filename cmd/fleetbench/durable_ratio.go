package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
)

// The targets of the durable path against the in-memory one, measured in
// one run of `sessions --durable`.
const (
	// durableRunsTarget: durable runs/s at least this share of in memory.
	durableRunsTarget = 0.67
	// durableCPUTarget: durable CPU per run of this process at most this
	// multiple of in memory. With --server process this process is the
	// orchestrator and the driver, the work agentfleet controls; the NATS
	// server's CPU, JetStream's price for storing, is reported beside it
	// (cpuTargetName).
	durableCPUTarget = 1.5
	// probeRuns is how many runs probeLatency measures.
	probeRuns = 50
	// temporalPerCallMs is what Temporal, the durable anchor, is reported to
	// pay per tool call (an activity of a workflow) on this kind of machine.
	temporalPerCallMs = 25.8
)

// Compared is one figure of the sessions benchmark in both rounds of one
// run, and the durable one over the in-memory one (0 when the in-memory
// figure is 0, so that no ratio is made up).
type Compared struct {
	InMemory float64 `json:"in_memory"`
	Durable  float64 `json:"durable"`
	Ratio    float64 `json:"ratio"`
}

func compare(inMemory, durable float64) Compared {
	c := Compared{InMemory: inMemory, Durable: durable}
	if inMemory > 0 {
		c.Ratio = durable / inMemory
	}
	return c
}

// DurableRatio is the price of durability in one `sessions --durable` run:
// the durable round against the in-memory round just before it, the
// targets of the durable path, and a comparison per tool call with Temporal.
type DurableRatio struct {
	// Sync is the embedded server's sync policy in the durable round.
	Sync       string   `json:"sync"`
	RunsPerSec Compared `json:"runs_per_sec"`
	// CPU per run, in microseconds: this process (orchestrator, driver and,
	// unless the server runs on its own, the NATS server) and the workers.
	CPUPerRunSelf    Compared `json:"cpu_per_run_self_us"`
	CPUPerRunWorkers Compared `json:"cpu_per_run_workers_us"`
	// ServerCPU says whether the NATS server's CPU was measured apart from
	// this process's, in both rounds (--server process). Then
	// CPUPerRunServer is the server child's CPU per run and
	// CPUPerRunSelfAndServer the sum of this process's and the server's;
	// otherwise both are absent.
	ServerCPU              bool      `json:"server_cpu_measured"`
	CPUPerRunServer        *Compared `json:"cpu_per_run_server_us,omitempty"`
	CPUPerRunSelfAndServer *Compared `json:"cpu_per_run_self_and_server_us,omitempty"`
	// What this process allocated per run (bytes, objects) and its
	// garbage collector's CPU per run, in microseconds.
	AllocBytesPerRun   Compared `json:"alloc_bytes_per_run"`
	AllocObjectsPerRun Compared `json:"alloc_objects_per_run"`
	GCCPUPerRun        Compared `json:"gc_cpu_per_run_us"`
	// HeapPerSession is the heap per idle session, in bytes.
	HeapPerSession Compared `json:"heap_per_session_bytes"`
	RunP50         Compared `json:"run_p50_us"`
	// UnloadedRunP50 is of runs asked one after another (probeLatency).
	UnloadedRunP50 Compared `json:"unloaded_run_p50_us"`
	// Targets: durable runs/s >= 0.67× and CPU per run of this process
	// <= 1.5× of in memory (its name says whether this process holds the
	// NATS server).
	Targets []Target `json:"targets"`
	// PerToolCall compares the durable path with Temporal, per tool call;
	// absent when the runs make no tool calls.
	PerToolCall *PerToolCall `json:"per_tool_call,omitempty"`
}

// PerToolCall is the durable path's price of one tool call beside
// Temporal's 25.8 ms. Temporal's figure is the wall time a workflow waits
// per activity, so the comparison is in wall time too, of a durable run
// with nothing else in flight (the benchmark's own runs queue behind
// --concurrency others): its median over the tool-call turns of a run (a
// turn's K calls run at once, so a turn is the sequential step Temporal's
// figure prices). The same under the benchmark's load, and the CPU of this
// process per tool call, are given beside it.
type PerToolCall struct {
	// DurableMs is the unloaded durable run p50 divided by the turns of a
	// run.
	DurableMs  float64 `json:"durable_unloaded_run_p50_per_turn_ms"`
	TemporalMs float64 `json:"temporal_ms"`
	// Ratio is DurableMs over TemporalMs: below 1, the durable path waits
	// less per tool call than Temporal.
	Ratio float64 `json:"ratio"`
	// LoadedMs is the durable run p50 under the benchmark's load divided by
	// the turns of a run.
	LoadedMs float64 `json:"durable_loaded_run_p50_per_turn_ms"`
	// CPUSelfUs is the durable CPU per run of this process divided by the
	// tool calls of a run, in microseconds.
	CPUSelfUs float64 `json:"durable_cpu_self_per_call_us"`
}

// probeLatency asks probeRuns runs of one session of its own, one after
// another, after one that loads it, and returns their latency: the run's
// own price, without the queueing of the benchmark's load.
func (m *Main) probeLatency(ctx context.Context, nc *bus.Conn) (Latency, error) {
	lats := make([]time.Duration, 0, probeRuns)
	for i := range probeRuns + 1 {
		t0 := time.Now()
		if err := askOnce(nc, "probe", m.Sessions.Timeout); err != nil {
			return Latency{}, fmt.Errorf("unloaded run: %w", err)
		}
		if i > 0 {
			lats = append(lats, time.Since(t0))
		}
		if err := ctx.Err(); err != nil {
			return Latency{}, err
		}
	}
	return summarize(lats), nil
}

// durableRatio compares the durable round dur with the in-memory round mem
// of the same run.
func durableRatio(mem, dur *SessionsReport, external bool) *DurableRatio {
	r := &DurableRatio{
		Sync:               dur.Sync,
		RunsPerSec:         compare(mem.RunsPerSec, dur.RunsPerSec),
		CPUPerRunSelf:      compare(mem.CPUPerRunSelf, dur.CPUPerRunSelf),
		CPUPerRunWorkers:   compare(mem.CPUPerRunWorkers, dur.CPUPerRunWorkers),
		HeapPerSession:     compare(mem.HeapPerSession, dur.HeapPerSession),
		AllocBytesPerRun:   compare(mem.AllocBytesPerRun, dur.AllocBytesPerRun),
		AllocObjectsPerRun: compare(mem.AllocObjectsPerRun, dur.AllocObjectsPerRun),
		GCCPUPerRun:        compare(mem.GCCPUPerRun, dur.GCCPUPerRun),
		RunP50:             compare(mem.RunLatency.P50, dur.RunLatency.P50),
		UnloadedRunP50:     compare(mem.UnloadedRunLatency.P50, dur.UnloadedRunLatency.P50),
	}
	if mem.ServerCPU && dur.ServerCPU {
		r.ServerCPU = true
		srv := compare(mem.CPUPerRunServer, dur.CPUPerRunServer)
		sum := compare(mem.CPUPerRunSelf+mem.CPUPerRunServer, dur.CPUPerRunSelf+dur.CPUPerRunServer)
		r.CPUPerRunServer, r.CPUPerRunSelfAndServer = &srv, &sum
	}
	runs := atLeast("durable runs/s against in memory", r.RunsPerSec.Ratio, durableRunsTarget, "×")
	cpu := atMost(cpuTargetName(r.ServerCPU, external), r.CPUPerRunSelf.Ratio, durableCPUTarget, "×")
	// A round that measured nothing meets no target.
	runs.Met = runs.Met && r.RunsPerSec.InMemory > 0
	cpu.Met = cpu.Met && r.CPUPerRunSelf.InMemory > 0 && r.CPUPerRunSelf.Durable > 0
	r.Targets = []Target{runs, cpu}
	c := dur.Config
	if calls := c.CallsPerTurn * c.Turns; calls > 0 {
		p := &PerToolCall{TemporalMs: temporalPerCallMs, CPUSelfUs: dur.CPUPerRunSelf / float64(calls)}
		p.DurableMs = dur.UnloadedRunLatency.P50 / 1e3 / float64(c.Turns)
		p.LoadedMs = dur.RunLatency.P50 / 1e3 / float64(c.Turns)
		p.Ratio = p.DurableMs / p.TemporalMs
		r.PerToolCall = p
	}
	return r
}

// cpuTargetName names the CPU target by what "this process" held: with the
// server in its own process, the orchestrator and the driver only; with an
// external server, the same, the server's CPU not measured.
func cpuTargetName(serverApart, external bool) string {
	switch {
	case serverApart:
		return "durable CPU per run (orchestrator + driver; NATS server apart) against in memory"
	case external:
		return "durable CPU per run (orchestrator + driver; the external NATS server not measured) against in memory"
	}
	return "durable CPU per run (this process, with the NATS server in it) against in memory"
}

func (r *DurableRatio) writeTables(w io.Writer) {
	fmt.Fprintf(w, "\nDurable (sync %s) against in memory, same run\n", r.Sync)
	tw := table(w)
	fmt.Fprintln(tw, "figure\tin memory\tdurable\tdurable/in memory\t")
	type row struct {
		name string
		c    Compared
	}
	rows := []row{{"runs/s", r.RunsPerSec}}
	if r.ServerCPU {
		rows = append(rows, row{"CPU/run µs, orchestrator + driver", r.CPUPerRunSelf},
			row{"CPU/run µs, NATS server", *r.CPUPerRunServer}, row{"CPU/run µs, both", *r.CPUPerRunSelfAndServer})
	} else {
		rows = append(rows, row{"CPU/run µs, this process", r.CPUPerRunSelf})
	}
	rows = append(rows,
		row{"CPU/run µs, workers", r.CPUPerRunWorkers},
		row{"GC CPU/run µs, orchestrator + driver", r.GCCPUPerRun},
		row{"allocated per run KB", Compared{r.AllocBytesPerRun.InMemory / 1e3, r.AllocBytesPerRun.Durable / 1e3, r.AllocBytesPerRun.Ratio}},
		row{"allocations per run", r.AllocObjectsPerRun},
		row{"heap per idle session KB", Compared{r.HeapPerSession.InMemory / 1e3, r.HeapPerSession.Durable / 1e3, r.HeapPerSession.Ratio}},
		row{"run p50 ms", Compared{r.RunP50.InMemory / 1e3, r.RunP50.Durable / 1e3, r.RunP50.Ratio}},
		row{"run p50 ms, one at a time", Compared{r.UnloadedRunP50.InMemory / 1e3, r.UnloadedRunP50.Durable / 1e3, r.UnloadedRunP50.Ratio}},
	)
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f×\t\n", row.name, number(row.c.InMemory), number(row.c.Durable), row.c.Ratio)
	}
	tw.Flush()
	if p := r.PerToolCall; p != nil {
		fmt.Fprintf(w, "per tool call, durable: %.2f ms (run p50 one at a time, per turn) against Temporal's %.1f ms: %.2f×; under load %.2f ms; CPU of this process %.0f µs\n",
			p.DurableMs, p.TemporalMs, p.Ratio, p.LoadedMs, p.CPUSelfUs)
	}
	writeTargets(w, r.Targets)
}
