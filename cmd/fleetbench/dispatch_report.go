package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// DispatchReport is the result of the dispatch benchmark. Each round
// measures every method side by side; the summaries are medians over the
// rounds, and every ratio is taken within a round first, then given as the
// median and range of the per-round ratios.
type DispatchReport struct {
	Benchmark string         `json:"benchmark"`
	Machine   Machine        `json:"machine"`
	Config    DispatchConfig `json:"config"`
	// Server is where the NATS server ran: embedded, external or process.
	Server string `json:"server"`
	// ServerCPU says whether the server's CPU is measured apart (a child
	// process); embedded, it is part of this process's.
	ServerCPU bool `json:"server_cpu_measured"`
	// Latency is, for each method, the median over the rounds of each
	// round's percentiles and mean, the largest Max of any round, and in N
	// the samples of all rounds.
	Latency map[string]Latency `json:"latency"`
	// LatencyRatio is the median over the rounds of full/raw for each
	// percentile, and LatencyRatioRange its range.
	LatencyRatio      map[string]float64 `json:"latency_ratio_full_raw"`
	LatencyRatioRange map[string]Spread  `json:"latency_ratio_full_raw_range"`
	// RecheckRatio is nats/raw for each percentile: near 1 if the raw
	// method measures NATS rather than its own client code.
	RecheckRatio map[string]Spread `json:"latency_ratio_nats_raw"`
	// ProdRatio is prod/raw for each percentile: what an orchestrator's
	// call costs against the raw one.
	ProdRatio map[string]Spread `json:"latency_ratio_prod_raw"`
	// TracedProdRatio is prod-traced/prod for each percentile, the cost of
	// tracing a call, and TracedRawRatio prod-traced/raw; when prod-traced
	// was measured.
	TracedProdRatio map[string]Spread `json:"latency_ratio_prod_traced_prod,omitempty"`
	TracedRawRatio  map[string]Spread `json:"latency_ratio_prod_traced_raw,omitempty"`
	// TraceExport is what prod-traced exported, when it was measured.
	TraceExport *TraceExport   `json:"trace_export,omitempty"`
	Throughput  []DispatchRate `json:"throughput"`
	// EventsPerCall is the number of events the full and local paths
	// published per call.
	EventsPerCall float64         `json:"events_per_call"`
	Targets       []Target        `json:"targets"`
	Rounds        []DispatchRound `json:"rounds"`
}

// DispatchRound is what one round measured.
type DispatchRound struct {
	// Order is the order the methods ran in, in every part of the round.
	Order      []string           `json:"order"`
	Latency    map[string]Latency `json:"latency"`
	Throughput []RoundRate        `json:"throughput"`
}

// RoundRate is one round's throughput and CPU per call at one in-flight
// count.
type RoundRate struct {
	InFlight  int                   `json:"in_flight"`
	PerSec    map[string]float64    `json:"per_sec"`
	CPU       map[string]CPUPerCall `json:"cpu_per_call"`
	FullCalls int64                 `json:"full_calls"`
}

// DispatchRate is the throughput of each method at one in-flight count:
// medians over the rounds, and the range of the per-round ratios.
type DispatchRate struct {
	InFlight     int     `json:"in_flight"`
	Raw          float64 `json:"raw_per_sec"`
	NATS         float64 `json:"nats_per_sec"`
	Full         float64 `json:"full_per_sec"`
	Prod         float64 `json:"prod_per_sec"`
	Local        float64 `json:"local_per_sec"`
	ProdTraced   float64 `json:"prod_traced_per_sec,omitempty"`
	RatioFullRaw float64 `json:"ratio_full_raw"`
	RatioFullLoc float64 `json:"ratio_full_local"`
	RangeFullRaw Spread  `json:"ratio_full_raw_range"`
	RangeFullLoc Spread  `json:"ratio_full_local_range"`
	RangeNATSRaw Spread  `json:"ratio_nats_raw_range"`
	RangeProdRaw Spread  `json:"ratio_prod_raw_range"`
	// RangeTracedProd and RangeTracedRaw are prod-traced/prod and
	// prod-traced/raw, when prod-traced was measured.
	RangeTracedProd Spread `json:"ratio_prod_traced_prod_range,omitzero"`
	RangeTracedRaw  Spread `json:"ratio_prod_traced_raw_range,omitzero"`
	BusyRefusals    int64  `json:"busy_refusals"`
	FullCallsDone   int64  `json:"full_calls"`
	// CPU is the median CPU time each method used per call, by this
	// process (client, events, and an embedded NATS server), by its child
	// process (responder or worker) and by a NATS server child process.
	CPU map[string]CPUPerCall `json:"cpu_per_call"`
	// RatioCPU is the median of the full method's total CPU per call over
	// the raw one's, and RangeCPU its range.
	RatioCPU float64 `json:"ratio_cpu_full_raw"`
	RangeCPU Spread  `json:"ratio_cpu_full_raw_range"`
	// RangeCPUTraced is prod-traced's total CPU per call over prod's.
	RangeCPUTraced Spread `json:"ratio_cpu_prod_traced_prod_range,omitzero"`
}

// CPUPerCall is CPU time per call, in microseconds.
type CPUPerCall struct {
	Self   float64 `json:"self_us"`
	Child  float64 `json:"child_us"`
	Server float64 `json:"server_us"`
	Total  float64 `json:"total_us"`
}

// summarize fills in the medians, ratios and targets from the rounds;
// busy holds the busy refusals at each in-flight count.
func (r *DispatchReport) summarize(busy []int64) {
	per := func(f func(DispatchRound) (float64, bool)) []float64 {
		var vs []float64
		for _, rd := range r.Rounds {
			if v, ok := f(rd); ok {
				vs = append(vs, v)
			}
		}
		return vs
	}
	r.Latency = map[string]Latency{}
	for _, name := range r.Config.Methods {
		lat := func(f func(Latency) float64) float64 {
			return median(per(func(rd DispatchRound) (float64, bool) { return f(rd.Latency[name]), true }))
		}
		l := Latency{
			P50: lat(func(l Latency) float64 { return l.P50 }), P90: lat(func(l Latency) float64 { return l.P90 }),
			P99: lat(func(l Latency) float64 { return l.P99 }), Mean: lat(func(l Latency) float64 { return l.Mean }),
		}
		for _, rd := range r.Rounds {
			l.N += rd.Latency[name].N
			l.Max = max(l.Max, rd.Latency[name].Max)
		}
		r.Latency[name] = l
	}
	latRatio := func(a, b string) map[string]Spread {
		if !r.has(a) || !r.has(b) {
			return nil
		}
		out := map[string]Spread{}
		for p, f := range map[string]func(Latency) float64{
			"p50": func(l Latency) float64 { return l.P50 }, "p90": func(l Latency) float64 { return l.P90 },
			"p99": func(l Latency) float64 { return l.P99 },
		} {
			out[p] = spreadOf(per(func(rd DispatchRound) (float64, bool) {
				return ratio(f(rd.Latency[a]), f(rd.Latency[b])), true
			}))
		}
		return out
	}
	r.LatencyRatioRange, r.RecheckRatio = latRatio(methodFull, methodRaw), latRatio(methodNATS, methodRaw)
	r.ProdRatio = latRatio(methodProd, methodRaw)
	r.TracedProdRatio, r.TracedRawRatio = latRatio(methodProdTraced, methodProd), latRatio(methodProdTraced, methodRaw)
	r.LatencyRatio = map[string]float64{}
	for p, s := range r.LatencyRatioRange {
		r.LatencyRatio[p] = s.Median
	}

	for i, n := range r.Config.InFlight {
		row := DispatchRate{InFlight: n, BusyRefusals: busy[i], CPU: map[string]CPUPerCall{}}
		at := func(f func(RoundRate) float64) []float64 {
			return per(func(rd DispatchRound) (float64, bool) { return f(rd.Throughput[i]), true })
		}
		rate := func(name string) float64 { return median(at(func(t RoundRate) float64 { return t.PerSec[name] })) }
		row.Raw, row.NATS, row.Full, row.Prod, row.Local = rate(methodRaw), rate(methodNATS), rate(methodFull), rate(methodProd), rate(methodLocal)
		row.ProdTraced = rate(methodProdTraced)
		rateRatio := func(a, b string) Spread {
			if !r.has(a) || !r.has(b) {
				return Spread{}
			}
			return spreadOf(at(func(t RoundRate) float64 { return ratio(t.PerSec[a], t.PerSec[b]) }))
		}
		row.RangeFullRaw, row.RangeFullLoc, row.RangeNATSRaw = rateRatio(methodFull, methodRaw), rateRatio(methodFull, methodLocal), rateRatio(methodNATS, methodRaw)
		row.RangeProdRaw = rateRatio(methodProd, methodRaw)
		row.RangeTracedProd, row.RangeTracedRaw = rateRatio(methodProdTraced, methodProd), rateRatio(methodProdTraced, methodRaw)
		row.RatioFullRaw, row.RatioFullLoc = row.RangeFullRaw.Median, row.RangeFullLoc.Median
		for _, name := range r.Config.Methods {
			cpu := func(f func(CPUPerCall) float64) float64 {
				return median(at(func(t RoundRate) float64 { return f(t.CPU[name]) }))
			}
			row.CPU[name] = CPUPerCall{
				Self: cpu(func(c CPUPerCall) float64 { return c.Self }), Child: cpu(func(c CPUPerCall) float64 { return c.Child }),
				Server: cpu(func(c CPUPerCall) float64 { return c.Server }), Total: cpu(func(c CPUPerCall) float64 { return c.Total }),
			}
		}
		if r.has(methodFull) && r.has(methodRaw) {
			row.RangeCPU = spreadOf(at(func(t RoundRate) float64 { return ratio(t.CPU[methodFull].Total, t.CPU[methodRaw].Total) }))
			row.RatioCPU = row.RangeCPU.Median
		}
		if r.has(methodProdTraced) && r.has(methodProd) {
			row.RangeCPUTraced = spreadOf(at(func(t RoundRate) float64 { return ratio(t.CPU[methodProdTraced].Total, t.CPU[methodProd].Total) }))
		}
		for _, rd := range r.Rounds {
			row.FullCallsDone += rd.Throughput[i].FullCalls
		}
		r.Throughput = append(r.Throughput, row)
	}

	if r.has(methodRaw) && r.has(methodFull) {
		r.Targets = []Target{
			atMost("dispatch p50 full/raw (median of rounds)", r.LatencyRatio["p50"], 1.25, "x"),
			atMost("dispatch p99 full/raw (median of rounds)", r.LatencyRatio["p99"], 1.5, "x"),
		}
		last := r.Throughput[len(r.Throughput)-1]
		r.Targets = append(r.Targets, atLeast(fmt.Sprintf("throughput full/raw at %d in flight (median of rounds)", last.InFlight), last.RatioFullRaw, 0.75, "x"))
	}
}

// has says whether the method was measured.
func (r *DispatchReport) has(name string) bool {
	return slices.Contains(r.Config.Methods, name)
}

// x formats a ratio with its range over the rounds: "1.61x (1.55–1.70)".
func (s Spread) x(digits int) string {
	return fmt.Sprintf("%.*fx (%.*f–%.*f)", digits, s.Median, digits, s.Min, digits, s.Max)
}

func (r *DispatchReport) writeTables(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "fleetbench dispatch — %s\n", r.Machine)
	fmt.Fprintf(w, "NATS server %s; payload %d bytes; %d rounds, methods in a shuffled order each round (seed %d)\n",
		r.Server, c.Payload, c.Rounds, c.Seed)
	fmt.Fprintf(w, "each round: %d sequential calls per method, then throughput runs of %v per method and in-flight count\n",
		c.Samples, c.Duration/time.Duration(c.Rounds))
	fmt.Fprintln(w, "  raw   = NATS request-reply, MessagePack, responder process")
	fmt.Fprintln(w, "  nats  = raw re-checked: plain nats.go, nc.Request in a loop / in goroutines, request encoded once, same responder")
	fmt.Fprintln(w, "  full  = pipeline prepare/execute/finalize + ToolClient + events, worker process")
	fmt.Fprintln(w, "  prod  = full as an orchestrator runs it: parallel mode, its event sink with metrics, JSON log at info")
	if r.has(methodProdTraced) {
		fmt.Fprintln(w, "  prod-traced = prod with tracing on: OTLP/HTTP batch export from this process and a traced worker process, calls under a recording turn span")
	}
	fmt.Fprintln(w, "  local = the same pipeline and events, tool run in-process")
	var orders []string
	for _, rd := range r.Rounds {
		orders = append(orders, strings.Join(rd.Order, ","))
	}
	fmt.Fprintf(w, "order by round: %s\n", strings.Join(orders, " | "))

	fmt.Fprintf(w, "\nSequential latency (µs; median over %d rounds of each round's value, each from %d samples; max of all rounds)\n", len(r.Rounds), c.Samples)
	tw := table(w)
	fmt.Fprintln(tw, "method\tsamples\tp50\tp90\tp99\tmean\tmax\t")
	for _, name := range allMethods {
		l, ok := r.Latency[name]
		if !ok || l.N == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", name, l.N, l.P50, l.P90, l.P99, l.Mean, l.Max)
	}
	for _, rr := range []struct {
		name string
		s    map[string]Spread
	}{{"full/raw", r.LatencyRatioRange}, {"prod/raw", r.ProdRatio}, {"nats/raw", r.RecheckRatio},
		{"prod-traced/raw", r.TracedRawRatio}, {"prod-traced/prod", r.TracedProdRatio}} {
		if rr.s != nil {
			fmt.Fprintf(tw, "%s\t\t%s\t%s\t%s\t\t\t\n", rr.name, rr.s["p50"].x(2), rr.s["p90"].x(2), rr.s["p99"].x(2))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "ratios: median of the per-round ratios (min–max over rounds)")

	fmt.Fprintln(w, "\nThroughput (calls/s, median over rounds)")
	tw = table(w)
	traced := r.has(methodProdTraced)
	head := "in flight\traw\tnats\tfull\tprod\tlocal\tfull/raw\tprod/raw\tfull/local\tnats/raw\t"
	if traced {
		head += "prod-traced\tprod-traced/raw\tprod-traced/prod\t"
	}
	fmt.Fprintln(tw, head+"busy refusals\t")
	for _, t := range r.Throughput {
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t", t.InFlight, t.Raw, t.NATS, t.Full, t.Prod, t.Local,
			t.RangeFullRaw.x(2), t.RangeProdRaw.x(2), t.RangeFullLoc.x(3), t.RangeNATSRaw.x(2))
		if traced {
			fmt.Fprintf(tw, "%.0f\t%s\t%s\t", t.ProdTraced, t.RangeTracedRaw.x(2), t.RangeTracedProd.x(2))
		}
		fmt.Fprintf(tw, "%d\t\n", t.BusyRefusals)
	}
	tw.Flush()
	who := "this process + child process"
	if r.ServerCPU {
		who += " + nats-server process"
	} else if r.Server == serverExternal {
		who += "; the external server's CPU is not counted"
	}
	fmt.Fprintf(w, "\nCPU per call during the throughput runs (µs, median over rounds: %s)\n", who)
	tw = table(w)
	head = "in flight\traw\tnats\tfull\tprod\tlocal\tfull/raw\t"
	if traced {
		head += "prod-traced\tprod-traced/prod\t"
	}
	fmt.Fprintln(tw, head)
	for _, t := range r.Throughput {
		cell := func(name string) string {
			c := t.CPU[name]
			if r.ServerCPU {
				return fmt.Sprintf("%.1f + %.1f + %.1f", c.Self, c.Child, c.Server)
			}
			return fmt.Sprintf("%.1f + %.1f", c.Self, c.Child)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t", t.InFlight, cell(methodRaw), cell(methodNATS), cell(methodFull), cell(methodProd), cell(methodLocal), t.RangeCPU.x(2))
		if traced {
			fmt.Fprintf(tw, "%s\t%s\t", cell(methodProdTraced), t.RangeCPUTraced.x(2))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if traced {
		fmt.Fprintln(w, "prod-traced: the CPU of the trace receiver, in this process, counts as this process's")
	}
	fmt.Fprintf(w, "events published per pipeline call: %.2f\n", r.EventsPerCall)
	if e := r.TraceExport; e != nil {
		fmt.Fprintf(w, "spans exported per prod-traced call: %.2f (%d spans, %d calls, warmup included; %d export requests, %.0f bytes per span)\n",
			ratio(float64(e.Spans), float64(e.Calls)), e.Spans, e.Calls, e.Requests, ratio(float64(e.Bytes), float64(e.Spans)))
	}
	writeTargets(w, r.Targets)
}
