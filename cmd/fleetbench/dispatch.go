package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/vmihailenco/msgpack/v5"
)

// DispatchConfig configures the dispatch benchmark.
type DispatchConfig struct {
	// Calls is the number of sequential calls of each method, measured in
	// Rounds interleaved rounds after Warmup calls.
	Calls  int `json:"calls"`
	Rounds int `json:"rounds"`
	Warmup int `json:"warmup"`
	// Duration is the length of each throughput run.
	Duration time.Duration `json:"duration_ns"`
	// InFlight lists the calls kept in flight by the throughput runs.
	InFlight []int `json:"in_flight"`
	// Payload is the size in bytes of the text argument and of the result.
	Payload int `json:"payload_bytes"`
	// WorkerConcurrency is the worker's limit; it exceeds the largest
	// in-flight count so that no call is refused.
	WorkerConcurrency int `json:"worker_concurrency"`
	// Methods lists the methods to measure; all three by default. One
	// method alone is for profiling it.
	Methods []string `json:"methods"`

	inFlight, methods string
}

func (c *DispatchConfig) register(fs *flag.FlagSet) {
	fs.IntVar(&c.Calls, "calls", 5000, "sequential calls of each method, for the latency percentiles")
	fs.IntVar(&c.Rounds, "rounds", 5, "interleaved rounds the sequential calls and the throughput runs are split into")
	fs.IntVar(&c.Warmup, "warmup", 300, "calls of each method before measuring")
	fs.DurationVar(&c.Duration, "duration", 3*time.Second, "time each method runs at each in-flight count, split into --rounds turns")
	fs.StringVar(&c.inFlight, "in-flight", "1,16,64", "comma-separated calls in flight of the throughput runs")
	fs.IntVar(&c.Payload, "payload", 200, "bytes of the text argument, and so of the result")
	fs.IntVar(&c.WorkerConcurrency, "worker-concurrency", 256, "concurrency limit of the worker")
	fs.StringVar(&c.methods, "methods", "raw,full,local", "comma-separated methods to measure (raw, full, local); one alone is for profiling it")
}

func (c *DispatchConfig) check() error {
	var err error
	if c.InFlight, err = parseInts(c.inFlight); err != nil {
		return fmt.Errorf("--in-flight: %w", err)
	}
	c.Methods = nil
	for _, f := range strings.Split(c.methods, ",") {
		switch f = strings.TrimSpace(f); f {
		case methodRaw, methodFull, methodLocal:
			c.Methods = append(c.Methods, f)
		default:
			return fmt.Errorf("--methods: %q is not one of raw, full, local", f)
		}
	}
	switch {
	case c.Calls < 1:
		return fmt.Errorf("--calls %d: must be at least 1", c.Calls)
	case c.Rounds < 1 || c.Rounds > c.Calls:
		return fmt.Errorf("--rounds %d: must be between 1 and --calls", c.Rounds)
	case c.Warmup < 0:
		return fmt.Errorf("--warmup %d: must not be negative", c.Warmup)
	case c.Duration <= 0:
		return fmt.Errorf("--duration %v: must be positive", c.Duration)
	case c.Payload < 1:
		return fmt.Errorf("--payload %d: must be at least 1", c.Payload)
	case c.WorkerConcurrency < 1:
		return fmt.Errorf("--worker-concurrency %d: must be at least 1", c.WorkerConcurrency)
	}
	return nil
}

// parseInts reads a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// The three ways of making a call that the dispatch benchmark compares.
const (
	methodRaw   = "raw"   // (a) NATS request-reply, MessagePack, responder process
	methodFull  = "full"  // (b) pipeline + ToolClient + events, worker process
	methodLocal = "local" // (c) pipeline + in-process handler + events
)

// DispatchReport is the result of the dispatch benchmark.
type DispatchReport struct {
	Benchmark string         `json:"benchmark"`
	Machine   Machine        `json:"machine"`
	Config    DispatchConfig `json:"config"`
	// Latency is the sequential latency of each method.
	Latency map[string]Latency `json:"latency"`
	// LatencyRatio is full/raw for each percentile.
	LatencyRatio map[string]float64 `json:"latency_ratio_full_raw"`
	Throughput   []DispatchRate     `json:"throughput"`
	// EventsPerCall is the number of events the full and local paths
	// published per call.
	EventsPerCall float64  `json:"events_per_call"`
	Targets       []Target `json:"targets"`
}

// DispatchRate is the throughput of each method at one in-flight count.
type DispatchRate struct {
	InFlight      int     `json:"in_flight"`
	Raw           float64 `json:"raw_per_sec"`
	Full          float64 `json:"full_per_sec"`
	Local         float64 `json:"local_per_sec"`
	RatioFullRaw  float64 `json:"ratio_full_raw"`
	RatioFullLoc  float64 `json:"ratio_full_local"`
	BusyRefusals  int64   `json:"busy_refusals"`
	FullCallsDone int64   `json:"full_calls"`
	// CPU is the CPU time each method used per call, by this process
	// (client, NATS server, events) and by its child process (responder or
	// worker).
	CPU map[string]CPUPerCall `json:"cpu_per_call"`
	// RatioCPU is the full method's CPU per call over the raw one's.
	RatioCPU float64 `json:"ratio_cpu_full_raw"`
}

// CPUPerCall is CPU time per call, in microseconds.
type CPUPerCall struct {
	Self  float64 `json:"self_us"`
	Child float64 `json:"child_us"`
	Total float64 `json:"total_us"`
}

// dispatchBench holds the three methods of the dispatch benchmark.
type dispatchBench struct {
	nc         *bus.Conn
	text       string
	args       map[string]any
	ids        atomic.Uint64
	remotePipe *pipeline.Pipeline
	localPipe  *pipeline.Pipeline
	remoteCtx  *pipeline.Context
	localCtx   *pipeline.Context
	assistant  *agentfleet.AssistantMessage
}

func (d *dispatchBench) nextID() string { return "call_" + strconv.FormatUint(d.ids.Add(1), 36) }

// raw is method (a): one MessagePack request, one MessagePack reply.
func (d *dispatchBench) raw(ctx context.Context) error {
	req := bus.CallRequest{V: bus.ProtocolVersion, ID: d.nextID(), Tool: toolEcho, Args: d.args, TimeoutMS: 60_000, Attempt: 1}
	data, err := msgpack.Marshal(&req)
	if err != nil {
		return err
	}
	msg, err := d.nc.Request(rawSubject, data, 30*time.Second)
	if err != nil {
		return fmt.Errorf("raw request: %w", err)
	}
	var res agentfleet.ToolResult
	if err := msgpack.Unmarshal(msg.Data, &res); err != nil {
		return fmt.Errorf("raw reply: %w", err)
	}
	return d.check(methodRaw, &res, false)
}

// full is method (b): the pipeline's prepare, execute and finalize, with
// tool.start and tool.end published, executed on the worker process.
func (d *dispatchBench) full(ctx context.Context) error {
	b := d.remotePipe.Run(ctx, d.remoteCtx, d.assistant, []agentfleet.ToolCall{{ID: d.nextID(), Name: toolEcho, Arguments: d.args}})
	o := b.Outcomes[0]
	return d.check(methodFull, o.Result, o.IsError)
}

// local is method (c): the same pipeline, the tool run in-process.
func (d *dispatchBench) local(ctx context.Context) error {
	b := d.localPipe.Run(ctx, d.localCtx, d.assistant, []agentfleet.ToolCall{{ID: d.nextID(), Name: toolEcho, Arguments: d.args}})
	o := b.Outcomes[0]
	return d.check(methodLocal, o.Result, o.IsError)
}

func (d *dispatchBench) check(method string, r *agentfleet.ToolResult, isError bool) error {
	if got := agentfleet.JoinText(r.Content); isError || got != d.text {
		return fmt.Errorf("%s call: unexpected result (error %v): %.200s", method, isError, got)
	}
	return nil
}

// envelope fills in the envelope of the pipeline's events, as a session
// would, before they are published.
type envelope struct {
	agent, session, runID string
	seq                   atomic.Uint64
	next                  agentfleet.EventSink
}

func (e *envelope) Emit(ev *agentfleet.Event) {
	ev.Agent, ev.Session, ev.RunID, ev.Turn = e.agent, e.session, e.runID, 1
	ev.Seq = e.seq.Add(1)
	ev.Time = time.Now().UTC()
	e.next.Emit(ev)
}

func (m *Main) runDispatch(ctx context.Context) (_ report, err error) {
	c := m.Dispatch
	var children []*child
	defer func() { err = errors.Join(err, stopChildren(children)) }()
	responder, err := m.startChild(ctx, "responder", cmdResponder)
	if err != nil {
		return nil, err
	}
	children = append(children, responder)
	worker, err := m.startChild(ctx, "worker", cmdWorker, "--name", "dispatch", "--concurrency", strconv.Itoa(c.WorkerConcurrency))
	if err != nil {
		return nil, err
	}
	children = append(children, worker)

	nc, err := m.connect("fleetbench-dispatch")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	var busy atomic.Int64
	client, err := bus.NewToolClient(nc, bus.ClientConfig{Observe: func(_, outcome, _ string) {
		if outcome == "busy" {
			busy.Add(1)
		}
	}})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	subjects, _ := bus.NewSubjects("")
	pub := bus.NewPublisher(nc, subjects, m.logger)
	sink := &envelope{agent: "bench", session: "dispatch", runID: "dispatch-run", next: pub}

	var g gauge
	remoteStore := tools.NewStore("bench")
	if err := remoteStore.Register(&agentfleet.Tool{ToolDef: echoDef}); err != nil {
		return nil, err
	}
	localStore := tools.NewStore("bench")
	if err := localStore.Register(benchTools(&g, 0)[0]); err != nil {
		return nil, err
	}
	text := payloadText(c.Payload)
	d := &dispatchBench{
		nc: nc, text: text, args: map[string]any{"text": text},
		remotePipe: pipeline.New(pipeline.Config{Executor: client, Sink: sink, Agent: sink.agent, Session: sink.session, RunID: sink.runID}),
		localPipe:  pipeline.New(pipeline.Config{Sink: sink, Agent: sink.agent, Session: sink.session, RunID: sink.runID}),
		remoteCtx:  &pipeline.Context{Tools: remoteStore},
		localCtx:   &pipeline.Context{Tools: localStore},
		assistant:  &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant},
	}
	type method struct {
		name string
		op   op
		cpu  cpuMeter
	}
	var methods []method
	for _, name := range c.Methods {
		switch name {
		case methodRaw:
			methods = append(methods, method{name, d.raw, cpuMeter{[]*child{responder}}})
		case methodFull:
			methods = append(methods, method{name, d.full, cpuMeter{[]*child{worker}}})
		case methodLocal:
			methods = append(methods, method{name, d.local, cpuMeter{}})
		}
	}

	for _, mt := range methods {
		if _, err := sequential(ctx, mt.op, c.Warmup, nil); err != nil {
			return nil, fmt.Errorf("warmup: %w", err)
		}
	}
	rep := &DispatchReport{Benchmark: cmdDispatch, Machine: thisMachine(), Config: c, Latency: map[string]Latency{}}
	// Sequential latency, in interleaved rounds so that a drift of the
	// machine touches every method alike.
	samples := map[string][]time.Duration{}
	for r := range c.Rounds {
		n := c.Calls / c.Rounds
		if r < c.Calls%c.Rounds {
			n++
		}
		for _, mt := range methods {
			if samples[mt.name], err = sequential(ctx, mt.op, n, samples[mt.name]); err != nil {
				return nil, err
			}
		}
	}
	for _, mt := range methods {
		rep.Latency[mt.name] = summarize(samples[mt.name])
	}
	raw, full := rep.Latency[methodRaw], rep.Latency[methodFull]
	rep.LatencyRatio = map[string]float64{
		"p50": ratio(full.P50, raw.P50), "p90": ratio(full.P90, raw.P90), "p99": ratio(full.P99, raw.P99),
	}

	// Throughput at each in-flight count, the methods taking turns in
	// rounds, like the latency.
	var fullCalls, localCalls int64
	ev0 := pub.Published()
	for _, n := range c.InFlight {
		row := DispatchRate{InFlight: n}
		busy0 := busy.Load()
		total := map[string]Rate{}
		cpuSelf, cpuChild := map[string]time.Duration{}, map[string]time.Duration{}
		for range c.Rounds {
			for _, mt := range methods {
				self0, child0 := mt.cpu.read()
				rate, err := throughput(ctx, mt.op, n, c.Duration/time.Duration(c.Rounds))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", mt.name, err)
				}
				self1, child1 := mt.cpu.read()
				cpuSelf[mt.name] += self1 - self0
				cpuChild[mt.name] += child1 - child0
				t := total[mt.name]
				t.Calls += rate.Calls
				t.Seconds += rate.Seconds
				total[mt.name] = t
			}
		}
		row.CPU = map[string]CPUPerCall{}
		for _, mt := range methods {
			calls := float64(total[mt.name].Calls)
			cs, cc := ratio(us(cpuSelf[mt.name]), calls), ratio(us(cpuChild[mt.name]), calls)
			row.CPU[mt.name] = CPUPerCall{Self: cs, Child: cc, Total: cs + cc}
		}
		row.RatioCPU = ratio(row.CPU[methodFull].Total, row.CPU[methodRaw].Total)
		perSec := func(name string) float64 { return ratio(float64(total[name].Calls), total[name].Seconds) }
		row.Raw, row.Full, row.Local = perSec(methodRaw), perSec(methodFull), perSec(methodLocal)
		row.FullCallsDone = total[methodFull].Calls
		fullCalls += total[methodFull].Calls
		localCalls += total[methodLocal].Calls
		row.RatioFullRaw, row.RatioFullLoc = ratio(row.Full, row.Raw), ratio(row.Full, row.Local)
		row.BusyRefusals = busy.Load() - busy0
		rep.Throughput = append(rep.Throughput, row)
	}
	rep.EventsPerCall = ratio(float64(pub.Published()-ev0), float64(fullCalls+localCalls))

	if raw.N > 0 && full.N > 0 {
		rep.Targets = []Target{
			atMost("dispatch p50 full/raw", rep.LatencyRatio["p50"], 1.5, "x"),
			atMost("dispatch p99 full/raw", rep.LatencyRatio["p99"], 2, "x"),
		}
		last := rep.Throughput[len(rep.Throughput)-1]
		rep.Targets = append(rep.Targets, atLeast(fmt.Sprintf("throughput full/raw at %d in flight", last.InFlight), last.RatioFullRaw, 0.7, "x"))
	}
	return rep, nil
}

func (r *DispatchReport) writeTables(w io.Writer) {
	fmt.Fprintf(w, "fleetbench dispatch — %s\n", r.Machine)
	fmt.Fprintf(w, "payload %d bytes; %d sequential calls per method in %d rounds; throughput runs of %v\n",
		r.Config.Payload, r.Config.Calls, r.Config.Rounds, r.Config.Duration)
	fmt.Fprintln(w, "  raw   = NATS request-reply, MessagePack, responder process")
	fmt.Fprintln(w, "  full  = pipeline prepare/execute/finalize + ToolClient + events, worker process")
	fmt.Fprintln(w, "  local = the same pipeline and events, tool run in-process")
	fmt.Fprintln(w, "\nSequential latency (µs)")
	tw := table(w)
	fmt.Fprintln(tw, "method\tp50\tp90\tp99\tmean\tmax\t")
	for _, name := range []string{methodRaw, methodFull, methodLocal} {
		l, ok := r.Latency[name]
		if !ok || l.N == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", name, l.P50, l.P90, l.P99, l.Mean, l.Max)
	}
	fmt.Fprintf(tw, "full/raw\t%.2fx\t%.2fx\t%.2fx\t\t\t\n", r.LatencyRatio["p50"], r.LatencyRatio["p90"], r.LatencyRatio["p99"])
	tw.Flush()
	fmt.Fprintln(w, "\nThroughput (calls/s)")
	tw = table(w)
	fmt.Fprintln(tw, "in flight\traw\tfull\tlocal\tfull/raw\tfull/local\tbusy refusals\t")
	for _, t := range r.Throughput {
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.0f\t%.2fx\t%.3fx\t%d\t\n", t.InFlight, t.Raw, t.Full, t.Local, t.RatioFullRaw, t.RatioFullLoc, t.BusyRefusals)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nCPU per call during the throughput runs (µs: this process + child process)")
	tw = table(w)
	fmt.Fprintln(tw, "in flight\traw\tfull\tlocal\tfull/raw\t")
	for _, t := range r.Throughput {
		cell := func(name string) string {
			c := t.CPU[name]
			return fmt.Sprintf("%.1f + %.1f", c.Self, c.Child)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.2fx\t\n", t.InFlight, cell(methodRaw), cell(methodFull), cell(methodLocal), t.RatioCPU)
	}
	tw.Flush()
	fmt.Fprintf(w, "events published per pipeline call: %.2f\n", r.EventsPerCall)
	writeTargets(w, r.Targets)
}
