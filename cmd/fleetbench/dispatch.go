package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/metrics"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel/trace"
)

// DispatchConfig configures the dispatch benchmark.
type DispatchConfig struct {
	// Samples is the number of sequential calls of each method in each
	// round, on which that round's latency percentiles rest.
	Samples int `json:"samples"`
	// Rounds is the number of rounds. Each round measures every method, in
	// an order shuffled with Seed, and yields its own ratios.
	Rounds int   `json:"rounds"`
	Seed   int64 `json:"seed"`
	// Warmup is the number of calls of each method before the first round.
	Warmup int `json:"warmup"`
	// Duration is the length of each throughput run, split over the rounds.
	Duration time.Duration `json:"duration_ns"`
	// InFlight lists the calls kept in flight by the throughput runs.
	InFlight []int `json:"in_flight"`
	// Payload is the size in bytes of the text argument and of the result.
	Payload int `json:"payload_bytes"`
	// WorkerConcurrency is the worker's limit; it exceeds the largest
	// in-flight count so that no call is refused.
	WorkerConcurrency int `json:"worker_concurrency"`
	// Methods lists the methods to measure: all but prod-traced by
	// default. One method alone is for profiling it.
	Methods []string `json:"methods"`

	inFlight, methods string
}

func (c *DispatchConfig) register(fs *flag.FlagSet) {
	fs.IntVar(&c.Samples, "samples", 2000, "sequential calls of each method in each round, on which the round's latency percentiles rest")
	fs.IntVar(&c.Rounds, "rounds", 5, "rounds; each measures every method in a shuffled order, and the report gives medians and ranges over them")
	fs.Int64Var(&c.Seed, "seed", 1, "seed of the order of the methods in each round")
	fs.IntVar(&c.Warmup, "warmup", 300, "calls of each method before measuring")
	fs.DurationVar(&c.Duration, "duration", 3*time.Second, "time each method runs at each in-flight count, split over the --rounds")
	fs.StringVar(&c.inFlight, "in-flight", "1,16,64", "comma-separated calls in flight of the throughput runs")
	fs.IntVar(&c.Payload, "payload", 200, "bytes of the text argument, and so of the result")
	fs.IntVar(&c.WorkerConcurrency, "worker-concurrency", 256, "concurrency limit of the worker")
	fs.StringVar(&c.methods, "methods", strings.Join(defaultMethods, ","), "comma-separated methods to measure (raw, nats, full, prod, prod-traced, local); one alone is for profiling it")
}

func (c *DispatchConfig) check() error {
	var err error
	if c.InFlight, err = parseInts(c.inFlight); err != nil {
		return fmt.Errorf("--in-flight: %w", err)
	}
	c.Methods = nil
	for _, f := range strings.Split(c.methods, ",") {
		switch f = strings.TrimSpace(f); f {
		case methodRaw, methodNATS, methodFull, methodProd, methodProdTraced, methodLocal:
			if slices.Contains(c.Methods, f) {
				return fmt.Errorf("--methods: %q twice", f)
			}
			c.Methods = append(c.Methods, f)
		default:
			return fmt.Errorf("--methods: %q is not one of raw, nats, full, prod, prod-traced, local", f)
		}
	}
	switch {
	case c.Samples < 1:
		return fmt.Errorf("--samples %d: must be at least 1", c.Samples)
	case c.Rounds < 1:
		return fmt.Errorf("--rounds %d: must be at least 1", c.Rounds)
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

// The ways of making a call that the dispatch benchmark compares.
const (
	methodRaw   = "raw"   // (a) NATS request-reply, MessagePack, responder process
	methodNATS  = "nats"  // (a) re-checked: plain nats.go loops, same responder
	methodFull  = "full"  // (b) pipeline + ToolClient + events, worker process
	methodProd  = "prod"  // (b) as an orchestrator runs it: its sink, metrics, logging at info
	methodLocal = "local" // (c) pipeline + in-process handler + events
	// methodProdTraced is prod with tracing on in both processes
	// (trace.go); it is measured only when --methods names it.
	methodProdTraced = "prod-traced"
)

// defaultMethods are the methods measured unless --methods says otherwise.
var defaultMethods = []string{methodRaw, methodNATS, methodFull, methodProd, methodLocal}

// allMethods is the order in which the report lists the methods.
var allMethods = []string{methodRaw, methodNATS, methodFull, methodProd, methodProdTraced, methodLocal}

// pipelineMethods are the methods whose calls go through the pipeline and
// publish events.
var pipelineMethods = []string{methodFull, methodProd, methodProdTraced, methodLocal}

// dispatchBench holds the three methods of the dispatch benchmark.
type dispatchBench struct {
	nc         *bus.Conn
	text       string
	args       map[string]any
	ids        atomic.Uint64
	remotePipe *pipeline.Pipeline
	prodPipe   *pipeline.Pipeline
	localPipe  *pipeline.Pipeline
	// tracedPipe is prodPipe's twin for prod-traced, and turn the recording
	// span its calls run under, as a turn's tool calls do.
	tracedPipe  *pipeline.Pipeline
	turn        trace.Span
	tracedCalls atomic.Int64
	remoteCtx   *pipeline.Context
	localCtx    *pipeline.Context
	assistant   *agentfleet.AssistantMessage
}

func (d *dispatchBench) nextID() string { return "call_" + strconv.FormatUint(d.ids.Add(1), 36) }

// raw is method (a): one MessagePack request, one MessagePack reply.
func (d *dispatchBench) raw(ctx context.Context) error {
	req := wire.CallRequest{V: wire.ProtocolVersion, ID: d.nextID(), Tool: toolEcho, Args: d.args, TimeoutMS: 60_000, Attempt: 1}
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

// prod is method (b) as an orchestrator pays for it: a parallel-mode
// pipeline (the default profile's), the orchestrator's own event sink with
// its metrics and a JSON log at info, and a tool client that counts its
// attempts in the metrics.
func (d *dispatchBench) prod(ctx context.Context) error {
	b := d.prodPipe.Run(ctx, d.remoteCtx, d.assistant, []agentfleet.ToolCall{{ID: d.nextID(), Name: toolEcho, Arguments: d.args}})
	o := b.Outcomes[0]
	return d.check(methodProd, o.Result, o.IsError)
}

// prodTraced is prod with tracing on: the call runs under a turn's
// recording span, so the pipeline starts the call's span, the request
// carries its trace context, and the traced worker starts its own span.
// Every call is under the same turn, so what it adds is the call's own
// tracing.
func (d *dispatchBench) prodTraced(ctx context.Context) error {
	d.tracedCalls.Add(1)
	b := d.tracedPipe.Run(trace.ContextWithSpan(ctx, d.turn), d.remoteCtx, d.assistant, []agentfleet.ToolCall{{ID: d.nextID(), Name: toolEcho, Arguments: d.args}})
	o := b.Outcomes[0]
	return d.check(methodProdTraced, o.Result, o.IsError)
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

// dispatchMethod is one method as a round runs it: its sequential latency,
// its throughput, and the child processes whose CPU it uses.
type dispatchMethod struct {
	name    string
	latency func(ctx context.Context, n int) ([]time.Duration, error)
	rate    func(ctx context.Context, inFlight int, d time.Duration) (Rate, error)
	cpu     cpuMeter
}

// harnessMethod runs o with the shared harness, sequential and throughput.
func harnessMethod(name string, o op, cpu cpuMeter) dispatchMethod {
	return dispatchMethod{
		name: name,
		latency: func(ctx context.Context, n int) ([]time.Duration, error) {
			return sequential(ctx, o, n, make([]time.Duration, 0, n))
		},
		rate: func(ctx context.Context, inFlight int, d time.Duration) (Rate, error) {
			return throughput(ctx, o, inFlight, d)
		},
		cpu: cpu,
	}
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
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{Observe: func(_, outcome, _ string) {
		if outcome == "busy" {
			busy.Add(1)
		}
	}})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	subjects, _ := bus.NewSubjects("")
	pub := events.NewPublisher(nc, subjects, m.logger)
	sink := &envelope{agent: "bench", session: "dispatch", runID: "dispatch-run", next: pub}

	// The prod method's parts, as cmd/orchestrator builds them.
	newProd := func(prefix string) (*pipeline.Pipeline, *toolrpc.ToolClient, error) {
		prodMetrics := metrics.NewOrchestrator()
		prodClient, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{Prefix: prefix, Observe: func(tool, outcome, _ string) {
			if outcome == "busy" {
				busy.Add(1)
			}
			prodMetrics.ToolAttempt(tool, outcome)
		}})
		if err != nil {
			return nil, nil, err
		}
		prodLog := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
		prodSink := &envelope{agent: "bench", session: "dispatch", runID: "dispatch-run",
			next: orchestrator.NewSink("fleetbench", prodMetrics, pub, prodLog)}
		return pipeline.New(pipeline.Config{Mode: pipeline.Parallel, Executor: fleetexec.Executor{Client: prodClient}, Sink: prodSink,
			Agent: prodSink.agent, Session: prodSink.session, RunID: prodSink.runID}), prodClient, nil
	}
	prodPipe, prodClient, err := newProd("")
	if err != nil {
		return nil, err
	}
	defer prodClient.Close()

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
		remotePipe: pipeline.New(pipeline.Config{Executor: fleetexec.Executor{Client: client}, Sink: sink, Agent: sink.agent, Session: sink.session, RunID: sink.runID}),
		prodPipe:   prodPipe,
		localPipe:  pipeline.New(pipeline.Config{Sink: sink, Agent: sink.agent, Session: sink.session, RunID: sink.runID}),
		remoteCtx:  &pipeline.Context{Tools: remoteStore},
		localCtx:   &pipeline.Context{Tools: localStore},
		assistant:  &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant},
	}
	var traced *tracedProd
	if slices.Contains(c.Methods, methodProdTraced) {
		// The same parts as prod's, on a prefix of their own where only the
		// traced worker serves.
		pipe, client, err := newProd(tracedPrefix)
		if err != nil {
			return nil, err
		}
		defer client.Close()
		if traced, err = m.startTracedProd(ctx, c.WorkerConcurrency); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, traced.finish()) }()
		d.tracedPipe, d.turn = pipe, traced.turn
	}
	var methods []dispatchMethod
	for _, name := range c.Methods {
		switch name {
		case methodRaw:
			methods = append(methods, harnessMethod(name, d.raw, cpuMeter{[]*child{responder}}))
		case methodNATS:
			nck, err := newNATSCheck(m.url, text)
			if err != nil {
				return nil, err
			}
			defer nck.close()
			methods = append(methods, dispatchMethod{name: name, latency: nck.latency, rate: nck.rate, cpu: cpuMeter{[]*child{responder}}})
		case methodFull:
			methods = append(methods, harnessMethod(name, d.full, cpuMeter{[]*child{worker}}))
		case methodProd:
			methods = append(methods, harnessMethod(name, d.prod, cpuMeter{[]*child{worker}}))
		case methodProdTraced:
			methods = append(methods, harnessMethod(name, d.prodTraced, cpuMeter{[]*child{traced.worker}}))
		case methodLocal:
			methods = append(methods, harnessMethod(name, d.local, cpuMeter{}))
		}
	}

	for _, mt := range methods {
		if _, err := mt.latency(ctx, c.Warmup); err != nil {
			return nil, fmt.Errorf("%s warmup: %w", mt.name, err)
		}
	}
	rep := &DispatchReport{Benchmark: cmdDispatch, Machine: m.machine(), Config: c, Server: m.Server}
	_, rep.ServerCPU = m.serverCPU()
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0))
	busyAt := make([]int64, len(c.InFlight))
	ev0 := pub.Published()
	var pipelineCalls int64
	for range c.Rounds {
		order := slices.Clone(methods)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		round := DispatchRound{Latency: map[string]Latency{}}
		for _, mt := range order {
			round.Order = append(round.Order, mt.name)
		}
		// Sequential latency, every method in turn.
		for _, mt := range order {
			ds, err := mt.latency(ctx, c.Samples)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", mt.name, err)
			}
			round.Latency[mt.name] = summarize(ds)
			if slices.Contains(pipelineMethods, mt.name) {
				pipelineCalls += int64(len(ds))
			}
		}
		// Throughput and CPU at each in-flight count, every method in turn.
		for i, n := range c.InFlight {
			rr := RoundRate{InFlight: n, PerSec: map[string]float64{}, CPU: map[string]CPUPerCall{}}
			busy0 := busy.Load()
			for _, mt := range order {
				self0, child0 := mt.cpu.read()
				srv0, _ := m.serverCPU()
				rate, err := mt.rate(ctx, n, c.Duration/time.Duration(c.Rounds))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", mt.name, err)
				}
				self1, child1 := mt.cpu.read()
				srv1, _ := m.serverCPU()
				calls := float64(rate.Calls)
				cpu := CPUPerCall{Self: ratio(us(self1-self0), calls), Child: ratio(us(child1-child0), calls), Server: ratio(us(srv1-srv0), calls)}
				cpu.Total = cpu.Self + cpu.Child + cpu.Server
				rr.PerSec[mt.name], rr.CPU[mt.name] = rate.PerSec, cpu
				if slices.Contains(pipelineMethods, mt.name) {
					pipelineCalls += rate.Calls
				}
				if mt.name == methodFull {
					rr.FullCalls = rate.Calls
				}
			}
			busyAt[i] += busy.Load() - busy0
			round.Throughput = append(round.Throughput, rr)
		}
		rep.Rounds = append(rep.Rounds, round)
	}
	rep.EventsPerCall = ratio(float64(pub.Published()-ev0), float64(pipelineCalls))
	if traced != nil {
		// Every span out, the worker's too, before they are counted.
		if err := traced.finish(); err != nil {
			return nil, err
		}
		rep.TraceExport = &traced.export
		rep.TraceExport.Calls = d.tracedCalls.Load()
	}
	rep.summarize(busyAt)
	return rep, nil
}
