package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/server"
)

// The test binary doubles as fleetbench: a child process started with
// FLEETBENCH_CHILD set runs main with its own arguments.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runBench runs fleetbench with args and --json, decodes its report into
// rep, and returns the tables the same report prints.
func runBench(t *testing.T, rep any, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	m := NewMain()
	m.Stdout, m.Stderr = &out, os.Stderr
	if err := m.ParseFlags(append(args, "--json")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := m.Run(ctx)
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("fleetbench %s: %v", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out.Bytes(), rep); err != nil {
		t.Fatalf("JSON report does not decode: %v\n%s", err, out.Bytes())
	}
	var tables bytes.Buffer
	m.Report.(report).writeTables(&tables)
	return tables.String()
}

func TestDispatch(t *testing.T) {
	var rep DispatchReport
	tables := runBench(t, &rep, "dispatch", "--samples", "50", "--rounds", "2", "--warmup", "2",
		"--duration", "100ms", "--in-flight", "1,4")
	checkDispatch(t, &rep, tables, 50, 2)
	if rep.Server != serverEmbedded || rep.ServerCPU {
		t.Errorf("server = %q, CPU measured %v; want embedded, not measured apart", rep.Server, rep.ServerCPU)
	}
}

// TestDispatchServerExternal points fleetbench at a server it did not
// start.
func TestDispatchServerExternal(t *testing.T) {
	s, err := server.RunEmbedded(server.EmbeddedConfig{Listen: "127.0.0.1:0", NoJetStream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	var rep DispatchReport
	tables := runBench(t, &rep, "dispatch", "--nats-url", s.ClientURL(), "--samples", "20", "--rounds", "2", "--warmup", "2",
		"--duration", "100ms", "--in-flight", "2")
	checkDispatch(t, &rep, tables, 20, 2)
	if rep.Server != serverExternal || rep.ServerCPU {
		t.Errorf("server = %q, CPU measured %v; want external, not measured", rep.Server, rep.ServerCPU)
	}
}

// TestDispatchServerProcess runs the NATS server as a child process, which
// needs the go command to build it.
func TestDispatchServerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nats-server")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build nats-server")
	}
	var rep DispatchReport
	tables := runBench(t, &rep, "dispatch", "--server", "process", "--samples", "20", "--rounds", "3", "--warmup", "2",
		"--duration", "150ms", "--in-flight", "2", "--seed", "7")
	checkDispatch(t, &rep, tables, 20, 3)
	if rep.Server != serverProcess || !rep.ServerCPU {
		t.Errorf("server = %q, CPU measured %v; want process, measured", rep.Server, rep.ServerCPU)
	}
	if !strings.Contains(tables, "nats-server process") {
		t.Errorf("tables do not say the server's CPU is counted:\n%s", tables)
	}
}

// TestDispatchTraced measures prod-traced side by side with prod, and
// checks that every call's two spans, the pipeline's and the worker's,
// reached the receiver.
func TestDispatchTraced(t *testing.T) {
	var rep DispatchReport
	tables := runBench(t, &rep, "dispatch", "--samples", "30", "--rounds", "2", "--warmup", "2",
		"--duration", "100ms", "--in-flight", "1,4", "--methods", "raw,prod,prod-traced")
	for i, rd := range rep.Rounds {
		if got, want := rd.Latency[methodProdTraced].N, 30; got != want {
			t.Errorf("round %d: prod-traced latency samples = %d, want %d", i, got, want)
		}
	}
	for _, ratios := range []map[string]Spread{rep.TracedProdRatio, rep.TracedRawRatio} {
		for _, p := range []string{"p50", "p90", "p99"} {
			if s := ratios[p]; s.Min <= 0 || s.Min > s.Median || s.Median > s.Max {
				t.Errorf("%s ratio = %+v, want 0 < min <= median <= max", p, s)
			}
		}
	}
	for _, row := range rep.Throughput {
		if row.ProdTraced <= 0 || row.RangeTracedProd.Median <= 0 || row.RangeCPUTraced.Median <= 0 {
			t.Errorf("throughput at %d in flight = %+v, want prod-traced calls and ratios", row.InFlight, row)
		}
	}
	e := rep.TraceExport
	if e == nil || e.Calls == 0 {
		t.Fatalf("trace export = %+v, want the prod-traced calls", e)
	}
	// Two spans a call, and the turn's.
	if got, want := e.Spans, 2*e.Calls+1; got != want {
		t.Errorf("spans exported = %d, want %d for %d calls", got, want, e.Calls)
	}
	if got, want := rep.EventsPerCall, 2.0; got != want {
		t.Errorf("events per call = %v, want %v (tool.start and tool.end)", got, want)
	}
	for _, want := range []string{"prod-traced/prod", "prod-traced/raw", "spans exported per prod-traced call"} {
		if !strings.Contains(tables, want) {
			t.Errorf("tables lack %q:\n%s", want, tables)
		}
	}
}

// checkDispatch checks a dispatch report of every method, samples calls
// per method per round and the given number of rounds.
func checkDispatch(t *testing.T, rep *DispatchReport, tables string, samples, rounds int) {
	t.Helper()
	if got := len(rep.Rounds); got != rounds {
		t.Fatalf("rounds = %d, want %d", got, rounds)
	}
	for i, rd := range rep.Rounds {
		if got := len(rd.Order); got != len(defaultMethods) {
			t.Errorf("round %d order = %v, want every method", i, rd.Order)
		}
		for _, name := range defaultMethods {
			if got := rd.Latency[name].N; got != samples {
				t.Errorf("round %d: %s latency samples = %d, want %d", i, name, got, samples)
			}
		}
		if len(rd.Throughput) != len(rep.Config.InFlight) {
			t.Errorf("round %d: throughput rows = %d, want %d", i, len(rd.Throughput), len(rep.Config.InFlight))
		}
	}
	for _, name := range defaultMethods {
		l := rep.Latency[name]
		if got, want := l.N, samples*rounds; got != want {
			t.Errorf("%s latency samples = %d, want %d", name, got, want)
		}
		if l.P50 <= 0 || l.P99 < l.P50 || l.Max < l.P99 {
			t.Errorf("%s latency = %+v", name, l)
		}
	}
	for _, ratios := range []map[string]Spread{rep.LatencyRatioRange, rep.RecheckRatio, rep.ProdRatio} {
		for _, p := range []string{"p50", "p90", "p99"} {
			if s := ratios[p]; s.Min <= 0 || s.Min > s.Median || s.Median > s.Max {
				t.Errorf("%s ratio = %+v, want 0 < min <= median <= max", p, s)
			}
		}
	}
	if rep.LatencyRatio["p50"] != rep.LatencyRatioRange["p50"].Median {
		t.Errorf("p50 full/raw %v is not the median of the rounds %+v", rep.LatencyRatio["p50"], rep.LatencyRatioRange["p50"])
	}
	if got, want := len(rep.Throughput), len(rep.Config.InFlight); got != want {
		t.Fatalf("throughput rows = %d, want %d", got, want)
	}
	for _, row := range rep.Throughput {
		if row.Raw <= 0 || row.NATS <= 0 || row.Full <= 0 || row.Prod <= 0 || row.Local <= 0 {
			t.Errorf("throughput at %d in flight = %+v, want every method to complete calls", row.InFlight, row)
		}
		for _, s := range []Spread{row.RangeFullRaw, row.RangeFullLoc, row.RangeNATSRaw, row.RangeProdRaw} {
			if s.Min <= 0 || s.Min > s.Median || s.Median > s.Max {
				t.Errorf("throughput ratio at %d in flight = %+v, want 0 < min <= median <= max", row.InFlight, s)
			}
		}
		if row.RatioFullRaw != row.RangeFullRaw.Median {
			t.Errorf("throughput full/raw %v is not the median of the rounds %+v", row.RatioFullRaw, row.RangeFullRaw)
		}
	}
	if got, want := rep.EventsPerCall, 2.0; got != want {
		t.Errorf("events per call = %v, want %v (tool.start and tool.end)", got, want)
	}
	if got, want := len(rep.Targets), 3; got != want {
		t.Errorf("targets = %d, want %d", got, want)
	}
	for _, want := range []string{"Sequential latency", "median over", "full/raw", "nats/raw", "min–max", "order by round", "Targets"} {
		if !strings.Contains(tables, want) {
			t.Errorf("tables lack %q:\n%s", want, tables)
		}
	}
}

func TestScale(t *testing.T) {
	var rep ScaleReport
	tables := runBench(t, &rep, "scale", "--workers", "1,2", "--concurrency", "2", "--sleep", "5ms",
		"--duration", "300ms", "--slow-factor", "4")
	if got, want := len(rep.Runs), 2; got != want {
		t.Fatalf("runs = %d, want %d", got, want)
	}
	for _, run := range rep.Runs {
		if run.PerSec <= 0 || len(run.PerWkr) != run.Workers {
			t.Errorf("run of %d workers = %+v", run.Workers, run)
		}
	}
	if rep.Slow == nil || len(rep.Slow.PerWkr) != 2 {
		t.Fatalf("slow run = %+v, want two workers", rep.Slow)
	}
	// The worker's limit is a hard bound, whatever the timing.
	for _, w := range rep.Slow.PerWkr {
		if w.PeakInFlight > int64(w.Limit) {
			t.Errorf("worker %s ran %d calls at once, limit %d", w.Name, w.PeakInFlight, w.Limit)
		}
	}
	if !strings.Contains(tables, "One slow worker") {
		t.Errorf("tables lack the slow worker run:\n%s", tables)
	}
}

func TestSessions(t *testing.T) {
	var rep SessionsReport
	tables := runBench(t, &rep, "sessions", "--sessions", "10", "--concurrency", "4", "--turns", "2", "--calls-per-turn", "2")
	if got, want := rep.Runs, 10; got != want {
		t.Errorf("runs = %d, want %d", got, want)
	}
	if got, want := rep.SessionsHeld, 10; got != want {
		t.Errorf("sessions held = %d, want %d", got, want)
	}
	if got, want := rep.ToolCalls, 40; got != want {
		t.Errorf("tool calls = %d, want %d", got, want)
	}
	if rep.After.HeapAlloc == 0 || rep.After.Goroutines == 0 {
		t.Errorf("memory after = %+v", rep.After)
	}
	if !strings.Contains(tables, "per idle session") {
		t.Errorf("tables lack the memory per session:\n%s", tables)
	}
}

// TestSessionsDurableRatio runs both rounds and reads the comparison from
// the JSON and the tables.
func TestSessionsDurableRatio(t *testing.T) {
	var rep SessionsReport
	tables := runBench(t, &rep, "sessions", "--sessions", "10", "--concurrency", "4", "--durable")
	r := rep.DurableRatio
	if r == nil || rep.Durable == nil {
		t.Fatalf("no durable round or ratio: %+v", rep)
	}
	if r.RunsPerSec.InMemory != rep.RunsPerSec || r.RunsPerSec.Durable != rep.Durable.RunsPerSec || r.Sync != rep.Durable.Sync || len(r.Targets) != 2 || r.PerToolCall == nil {
		t.Errorf("durable ratio = %+v, from rounds of %v and %v runs/s", r, rep.RunsPerSec, rep.Durable.RunsPerSec)
	}
	for _, want := range []string{"against in memory, same run", "Temporal's 25.8 ms", "durable runs/s against in memory"} {
		if !strings.Contains(tables, want) {
			t.Errorf("tables lack %q:\n%s", want, tables)
		}
	}
}

func TestOrchestrators(t *testing.T) {
	var rep OrchestratorsReport
	tables := runBench(t, &rep, "orchestrators", "--counts", "1,2", "--sessions", "16", "--duration", "500ms", "--rounds", "1",
		"--model-latency", "5ms", "--lease-ttl", "1s")
	if len(rep.Rows) != 2 {
		t.Fatalf("rows = %+v", rep.Rows)
	}
	for _, row := range rep.Rows {
		if row.RunsPerSec <= 0 || len(row.Shares) != row.Orchestrators {
			t.Errorf("row %+v: no runs, or not one share per orchestrator", row)
		}
	}
	if f := rep.Failover; f == nil || f.Orchestrators != 2 || f.MaxGapMS <= 0 {
		t.Errorf("failover = %+v", rep.Failover)
	}
	if !strings.Contains(tables, "failover: 1 of 2 orchestrators cut off") {
		t.Errorf("tables lack the failover:\n%s", tables)
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name, args, want string
	}{
		{"no command", "", "no command given"},
		{"unknown command", "bench", `unknown command "bench"`},
		{"bad in-flight", "dispatch --in-flight 1,x", `--in-flight: "x" is not a positive integer`},
		{"zero samples", "dispatch --samples 0", "--samples 0: must be at least 1"},
		{"zero rounds", "dispatch --rounds 0", "--rounds 0: must be at least 1"},
		{"bad method", "dispatch --methods raw,grpc", `"grpc" is not one of`},
		{"bad server", "dispatch --server cloud", `--server "cloud": not one of`},
		{"external without url", "dispatch --server external", "--nats-url is required"},
		{"process with url", "scale --server process --nats-url nats://127.0.0.1:4222", "--nats-url is only for --server external"},
		{"server cpus embedded", "sessions --server-cpus 1", "--server-cpus is only for --server process, not embedded"},
		{"server cpus not a number", "sessions --server process --server-cpus one", `"one" is not a CPU number or range`},
		{"server cpus backwards", "sessions --server process --server-cpus 3-1", `"3-1" is not a CPU number or range`},
		{"server cpus not ours", "sessions --server process --server-cpus 1023", "CPU 1023 is not one this process may use"},
		{"bad workers", "scale --workers 0", `--workers: "0" is not a positive integer`},
		{"one session", "sessions --sessions 1", "--sessions 1: must be at least 2"},
		{"bad counts", "orchestrators --counts 1,0", `--counts: "0" is not a positive integer`},
		{"worker without server", "worker", "--nats-url is required"},
		{"extra argument", "scale extra", `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMain()
			m.Stderr = new(bytes.Buffer)
			err := m.ParseFlags(strings.Fields(tt.args))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
