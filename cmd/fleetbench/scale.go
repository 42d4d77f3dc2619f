package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	busfleet "github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// ScaleConfig configures the scale benchmark.
type ScaleConfig struct {
	// Sleep is the duration of one call of the sleep-like tool.
	Sleep time.Duration `json:"sleep_ns"`
	// Workers lists the fleet sizes to measure.
	Workers []int `json:"workers"`
	// Concurrency is every worker's limit of calls at once.
	Concurrency int `json:"concurrency"`
	// InFlightFactor sets the calls kept in flight: workers × concurrency ×
	// factor, enough to saturate the fleet.
	InFlightFactor int `json:"in_flight_factor"`
	// Duration is the length of each run.
	Duration time.Duration `json:"duration_ns"`
	// SlowFactor makes one worker of the last run that much slower.
	SlowFactor int `json:"slow_factor"`

	workers string
}

func (c *ScaleConfig) register(fs *flag.FlagSet) {
	fs.DurationVar(&c.Sleep, "sleep", 20*time.Millisecond, "duration of one call of the sleep-like tool")
	fs.StringVar(&c.workers, "workers", "1,2,4", "comma-separated fleet sizes (worker processes); the first is the base of the ratios")
	fs.IntVar(&c.Concurrency, "concurrency", 8, "concurrency limit of every worker")
	fs.IntVar(&c.InFlightFactor, "in-flight-factor", 2, "calls in flight = workers × concurrency × this")
	fs.DurationVar(&c.Duration, "duration", 5*time.Second, "length of each run")
	fs.IntVar(&c.SlowFactor, "slow-factor", 10, "the slow worker of the last run takes this many times longer per call; 0 skips that run")
}

func (c *ScaleConfig) check() error {
	var err error
	if c.Workers, err = parseInts(c.workers); err != nil {
		return fmt.Errorf("--workers: %w", err)
	}
	switch {
	case c.Sleep <= 0:
		return fmt.Errorf("--sleep %v: must be positive", c.Sleep)
	case c.Concurrency < 1:
		return fmt.Errorf("--concurrency %d: must be at least 1", c.Concurrency)
	case c.InFlightFactor < 1:
		return fmt.Errorf("--in-flight-factor %d: must be at least 1", c.InFlightFactor)
	case c.Duration <= 0:
		return fmt.Errorf("--duration %v: must be positive", c.Duration)
	case c.SlowFactor < 0:
		return fmt.Errorf("--slow-factor %d: must not be negative", c.SlowFactor)
	}
	return nil
}

// ScaleReport is the result of the scale benchmark.
type ScaleReport struct {
	Benchmark string      `json:"benchmark"`
	Machine   Machine     `json:"machine"`
	Config    ScaleConfig `json:"config"`
	Runs      []ScaleRun  `json:"runs"`
	// Slow is the run with one slow worker, if it was made.
	Slow    *ScaleRun `json:"slow,omitempty"`
	Targets []Target  `json:"targets"`
}

// ScaleRun is one fleet measured.
type ScaleRun struct {
	Workers  int `json:"workers"`
	InFlight int `json:"in_flight"`
	// PerSec is the calls completed per second; Ideal is what the fleet's
	// slots allow (each worker's concurrency / its call duration).
	PerSec     float64 `json:"per_sec"`
	Ideal      float64 `json:"ideal_per_sec"`
	Efficiency float64 `json:"efficiency"`
	// Speedup is PerSec over that of the first fleet size; Linear is the
	// speedup over the ideal one (workers / first workers).
	Speedup float64 `json:"speedup"`
	Linear  float64 `json:"linear"`
	// Latency is the latency of the calls, retries after busy refusals
	// included.
	Latency Latency `json:"latency"`
	// Busy counts the busy refusals the client received.
	Busy int64 `json:"busy_refusals"`
	// CPU per completed call, in microseconds: this process (client, NATS
	// server, events) and the workers.
	CPUSelf    float64       `json:"cpu_per_call_self_us"`
	CPUWorkers float64       `json:"cpu_per_call_workers_us"`
	PerWkr     []ScaleWorker `json:"per_worker"`
	calls      int64
	seconds    float64
}

// ScaleWorker is one worker of a run.
type ScaleWorker struct {
	Name  string        `json:"name"`
	Delay time.Duration `json:"delay_ns"`
	// Calls counts the calls the worker completed, as the client saw.
	Calls int64 `json:"calls"`
	// Share is Calls over all calls of the run.
	Share float64 `json:"share"`
	// PeakInFlight and Limit are the worker's own count of the most calls
	// it ran at once, and its concurrency.
	PeakInFlight int64  `json:"peak_in_flight"`
	Limit        int    `json:"limit"`
	BusyRefusals uint64 `json:"busy_refusals"`
}

// scaleWorkerSpec is one worker to start.
type scaleWorkerSpec struct {
	name  string
	delay time.Duration
}

// runScaleFleet starts the workers, keeps the fleet saturated with calls of
// the sleep-like tool for the configured duration, and stops them.
func (m *Main) runScaleFleet(ctx context.Context, specs []scaleWorkerSpec) (_ *ScaleRun, err error) {
	c := m.Scale
	var children []*child
	defer func() { err = errors.Join(err, stopChildren(children)) }()
	byIdent := map[string]int{}
	for i, s := range specs {
		ch, err := m.startChild(ctx, s.name, cmdWorker, "--name", s.name,
			"--concurrency", strconv.Itoa(c.Concurrency), "--delay", s.delay.String())
		if err != nil {
			return nil, err
		}
		children = append(children, ch)
		byIdent[ch.ident] = i
	}
	nc, err := m.connect("fleetbench-scale")
	if err != nil {
		return nil, err
	}
	defer nc.Close()

	var mu sync.Mutex
	completed := make([]int64, len(specs))
	var busy int64
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{Observe: func(_, outcome, _ string) {
		if outcome == "busy" {
			mu.Lock()
			busy++
			mu.Unlock()
		}
	}})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	subjects, _ := bus.NewSubjects("")
	// As the orchestrator does: no more calls in flight than the fleet
	// advertises slots, the rest waiting in the client, and each call to
	// the worker with the most free slots.
	fleet, err := busfleet.WatchFleet(ctx, nc, subjects, busfleet.FleetConfig{OnCapacity: client.SetCapacity, OnWorkers: client.SetWorkers, Logger: m.logger})
	if err != nil {
		return nil, err
	}
	defer fleet.Close()
	sink := &envelope{agent: "bench", session: "scale", runID: "scale-run", next: events.NewPublisher(nc, subjects, m.logger)}
	store := tools.NewStore("bench")
	if err := store.Register(&agentfleet.Tool{ToolDef: sleepDef}); err != nil {
		return nil, err
	}
	p := pipeline.New(pipeline.Config{Executor: fleetexec.Executor{Client: client}, Sink: sink, Agent: sink.agent, Session: sink.session, RunID: sink.runID})
	pctx := &pipeline.Context{Tools: store}
	assistant := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant}
	args := map[string]any{"ms": c.Sleep.Milliseconds()}
	var (
		ids  uint64
		lats []time.Duration
	)
	call := func(ctx context.Context) error {
		mu.Lock()
		ids++
		id := "call_" + strconv.FormatUint(ids, 36)
		mu.Unlock()
		start := time.Now()
		b := p.Run(ctx, pctx, assistant, []agentfleet.ToolCall{{ID: id, Name: toolSleep, Arguments: args}})
		d := time.Since(start)
		o := b.Outcomes[0]
		if o.IsError {
			return fmt.Errorf("scale call: %s", agentfleet.JoinText(o.Result.Content))
		}
		i, ok := byIdent[o.Result.Worker]
		mu.Lock()
		defer mu.Unlock()
		if ok {
			completed[i]++
		}
		lats = append(lats, d)
		return nil
	}

	inFlight := len(specs) * c.Concurrency * c.InFlightFactor
	meter := cpuMeter{children}
	self0, workers0 := meter.read()
	rate, err := throughput(ctx, call, inFlight, c.Duration)
	if err != nil {
		return nil, err
	}
	self1, workers1 := meter.read()
	run := &ScaleRun{Workers: len(specs), InFlight: inFlight, PerSec: rate.PerSec, Busy: busy, calls: rate.Calls, seconds: rate.Seconds}
	run.CPUSelf = ratio(us(self1-self0), float64(rate.Calls))
	run.CPUWorkers = ratio(us(workers1-workers0), float64(rate.Calls))
	run.Latency = summarize(lats)
	for i, s := range specs {
		run.Ideal += float64(c.Concurrency) / s.delay.Seconds()
		st, err := workerStats(nc, s.name)
		if err != nil {
			return nil, err
		}
		run.PerWkr = append(run.PerWkr, ScaleWorker{
			Name: s.name, Delay: s.delay, Calls: completed[i], Share: ratio(float64(completed[i]), float64(rate.Calls)),
			PeakInFlight: st.PeakInFlight, Limit: st.Limit, BusyRefusals: st.Busy,
		})
	}
	run.Efficiency = ratio(run.PerSec, run.Ideal)
	return run, nil
}

func (m *Main) runScale(ctx context.Context) (report, error) {
	c := m.Scale
	rep := &ScaleReport{Benchmark: cmdScale, Machine: m.machine(), Config: c}
	for _, n := range c.Workers {
		var specs []scaleWorkerSpec
		for i := range n {
			specs = append(specs, scaleWorkerSpec{name: fmt.Sprintf("scale-%dw-%d", n, i+1), delay: c.Sleep})
		}
		run, err := m.runScaleFleet(ctx, specs)
		if err != nil {
			return nil, fmt.Errorf("%d workers: %w", n, err)
		}
		base := run
		if len(rep.Runs) > 0 {
			base = &rep.Runs[0]
		}
		run.Speedup = ratio(run.PerSec, base.PerSec)
		run.Linear = ratio(run.Speedup, float64(run.Workers)/float64(base.Workers))
		rep.Runs = append(rep.Runs, *run)
	}
	if c.SlowFactor > 0 {
		n := slices.Max(c.Workers)
		specs := []scaleWorkerSpec{{name: "scale-slow", delay: c.Sleep * time.Duration(c.SlowFactor)}}
		for i := range n - 1 {
			specs = append(specs, scaleWorkerSpec{name: fmt.Sprintf("scale-fast-%d", i+1), delay: c.Sleep})
		}
		run, err := m.runScaleFleet(ctx, specs)
		if err != nil {
			return nil, fmt.Errorf("slow worker run: %w", err)
		}
		rep.Slow = run
	}

	first, last := rep.Runs[0], rep.Runs[len(rep.Runs)-1]
	if last.Workers > first.Workers {
		// The target is 3.8x for 4 workers over 1: 95% of linear.
		goal := 0.95 * float64(last.Workers) / float64(first.Workers)
		rep.Targets = append(rep.Targets, atLeast(fmt.Sprintf("throughput %d workers / %d", last.Workers, first.Workers), last.Speedup, goal, "x"))
	}
	if rep.Slow != nil {
		s := rep.Slow.PerWkr[0]
		rep.Targets = append(rep.Targets, atMost("slow worker peak in flight / its limit", float64(s.PeakInFlight)/float64(s.Limit), 1, "x"))
	}
	return rep, nil
}

func (r *ScaleReport) writeTables(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "fleetbench scale — %s\n", r.Machine)
	fmt.Fprintf(w, "sleep-like tool of %v; concurrency %d per worker; %d× the fleet's slots in flight; runs of %v; full dispatch path (pipeline + ToolClient + events)\n",
		c.Sleep, c.Concurrency, c.InFlightFactor, c.Duration)
	fmt.Fprintln(w, "\nThroughput by fleet size")
	tw := table(w)
	fmt.Fprintln(tw, "workers\tin flight\tcalls/s\tideal\tefficiency\tspeedup\tof linear\tp50 ms\tp99 ms\tbusy refusals\tCPU/call µs (this + workers)\t")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.0f\t%.1f%%\t%.2fx\t%.1f%%\t%.1f\t%.1f\t%d\t%.0f + %.0f\t\n", run.Workers, run.InFlight, run.PerSec, run.Ideal,
			100*run.Efficiency, run.Speedup, 100*run.Linear, run.Latency.P50/1e3, run.Latency.P99/1e3, run.Busy, run.CPUSelf, run.CPUWorkers)
	}
	tw.Flush()
	if s := r.Slow; s != nil {
		fmt.Fprintf(w, "\nOne slow worker (%d× slower) among %d: %.0f calls/s of %.0f ideal (%.1f%%); p50 %.1f ms, p99 %.1f ms; %d busy refusals\n",
			c.SlowFactor, s.Workers-1, s.PerSec, s.Ideal, 100*s.Efficiency, s.Latency.P50/1e3, s.Latency.P99/1e3, s.Busy)
		tw = table(w)
		fmt.Fprintln(tw, "worker\tcall time\tcalls\tshare\tpeak in flight\tlimit\tbusy refusals sent\t")
		for _, pw := range s.PerWkr {
			fmt.Fprintf(tw, "%s\t%v\t%d\t%.1f%%\t%d\t%d\t%d\t\n", pw.Name, pw.Delay, pw.Calls, 100*pw.Share, pw.PeakInFlight, pw.Limit, pw.BusyRefusals)
		}
		tw.Flush()
	}
	writeTargets(w, r.Targets)
}
