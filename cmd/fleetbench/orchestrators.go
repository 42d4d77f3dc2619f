package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// OrchestratorsConfig configures the orchestrators benchmark: the same load
// on 1, 2, ... orchestrators sharing the sessions of one prefix, with a
// model that has latency and a bound on each orchestrator's model calls in
// flight, so that capacity comes from orchestrators, as in real fleets
// where the model, not the CPU, is the bottleneck.
type OrchestratorsConfig struct {
	Counts   []int         `json:"counts"`
	Sessions int           `json:"sessions"`
	Duration time.Duration `json:"duration_ns"`
	Rounds   int           `json:"rounds"`
	// ModelLatency is the time of one model call; LLMConcurrency bounds an
	// orchestrator's model calls in flight.
	ModelLatency   time.Duration `json:"model_latency_ns"`
	LLMConcurrency int           `json:"llm_concurrency"`
	LeaseTTL       time.Duration `json:"lease_ttl_ns"`
	// Replicas of the streams and buckets, for a cluster named by
	// --nats-url (each round then uses a prefix of its own).
	Replicas int `json:"stream_replicas"`
	counts   string
}

func (c *OrchestratorsConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.counts, "counts", "1,2,3", "orchestrator counts to compare, in one run")
	fs.IntVar(&c.Sessions, "sessions", 96, "sessions, each sending its next ask when the last is answered")
	fs.DurationVar(&c.Duration, "duration", 3*time.Second, "measured time of one round")
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds per count (medians are reported)")
	fs.DurationVar(&c.ModelLatency, "model-latency", 50*time.Millisecond, "latency of one model call")
	fs.IntVar(&c.LLMConcurrency, "llm-concurrency", 8, "model calls in flight per orchestrator")
	fs.DurationVar(&c.LeaseTTL, "lease-ttl", 3*time.Second, "lease TTL of the orchestrators (bounds the failover)")
	fs.IntVar(&c.Replicas, "stream-replicas", 1, "replicas of the streams and buckets (3 on a cluster given with --nats-url)")
}

func (c *OrchestratorsConfig) check() error {
	counts, err := parseInts(c.counts)
	if err != nil {
		return fmt.Errorf("--counts: %w", err)
	}
	c.Counts = counts
	switch {
	case c.Sessions < 1:
		return fmt.Errorf("--sessions %d: must be at least 1", c.Sessions)
	case c.Rounds < 1:
		return fmt.Errorf("--rounds %d: must be at least 1", c.Rounds)
	case c.LLMConcurrency < 1:
		return fmt.Errorf("--llm-concurrency %d: must be at least 1", c.LLMConcurrency)
	case c.Duration <= 0 || c.ModelLatency < 0 || c.LeaseTTL <= 0:
		return errors.New("--duration and --lease-ttl must be positive, --model-latency not negative")
	}
	return nil
}

// OrchestratorsReport is the result: one row per orchestrator count, and
// the failover of the largest.
type OrchestratorsReport struct {
	Config   OrchestratorsConfig `json:"config"`
	Rows     []OrchestratorsRow  `json:"rows"`
	Failover *FailoverResult     `json:"failover,omitempty"`
}

// OrchestratorsRow is the median over rounds for one orchestrator count.
type OrchestratorsRow struct {
	Orchestrators int     `json:"orchestrators"`
	RunsPerSec    float64 `json:"runs_per_s"`
	Speedup       float64 `json:"speedup"` // against the first row
	CPUPerRunUS   float64 `json:"cpu_per_run_us"`
	P50MS         float64 `json:"p50_ms"`
	P99MS         float64 `json:"p99_ms"`
	// Shares are the runs each orchestrator ran, as a share of the round's,
	// sorted (1 / Orchestrators each when even).
	Shares []float64 `json:"shares"`
}

// FailoverResult: one orchestrator of several loses its connection without
// a word (as in a crash); the time until every session it owned answered
// again.
type FailoverResult struct {
	Orchestrators int     `json:"orchestrators"`
	Sessions      int     `json:"sessions_moved"`
	MaxGapMS      float64 `json:"max_gap_ms"`
	MedianGapMS   float64 `json:"median_gap_ms"`
}

// latencyModel answers every call after a delay, with one tool call on the
// first turn; its semaphore bounds the calls in flight.
func latencyModel(latency time.Duration, limit int) loop.Model {
	sem := make(chan struct{}, limit)
	return loop.ModelFunc(func(ctx context.Context, req *loop.Request, _ loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-sem }()
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		if _, ok := req.Messages[len(req.Messages)-1].(*agentfleet.ToolResultMessage); ok {
			return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text("done")}, StopReason: agentfleet.StopReasonStop}, nil
		}
		return &agentfleet.AssistantMessage{StopReason: agentfleet.StopReasonToolUse, Content: []agentfleet.Content{
			{Type: agentfleet.ContentToolCall, ID: "call_1", Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`)},
		}}, nil
	})
}

func (m *Main) runOrchestrators(ctx context.Context) (report, error) {
	cfg := m.Orchestrators
	dir, err := os.MkdirTemp("", "fleetbench-orchestrators-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep := &OrchestratorsReport{Config: cfg}
	maxN := slices.Max(cfg.Counts)
	for _, n := range cfg.Counts {
		var rounds []OrchestratorsRow
		for r := range cfg.Rounds {
			row, _, err := m.orchestratorsRound(ctx, fmt.Sprintf("%s/%d-%d", dir, n, r), n, false)
			if err != nil {
				return nil, err
			}
			rounds = append(rounds, row)
		}
		rep.Rows = append(rep.Rows, medianRow(rounds))
	}
	for i := range rep.Rows {
		rep.Rows[i].Speedup = rep.Rows[i].RunsPerSec / rep.Rows[0].RunsPerSec
	}
	if maxN > 1 {
		_, fo, err := m.orchestratorsRound(ctx, dir+"/failover", maxN, true)
		if err != nil {
			return nil, err
		}
		rep.Failover = fo
	}
	return rep, nil
}

func medianRow(rows []OrchestratorsRow) OrchestratorsRow {
	slices.SortFunc(rows, func(a, b OrchestratorsRow) int {
		switch {
		case a.RunsPerSec < b.RunsPerSec:
			return -1
		case a.RunsPerSec > b.RunsPerSec:
			return 1
		}
		return 0
	})
	return rows[len(rows)/2]
}

// orchestratorsRound starts a JetStream server, one worker and n
// orchestrators, drives the sessions for the configured duration and
// measures; with failover, it cuts one orchestrator off halfway and
// measures how long its sessions went unanswered instead.
func (m *Main) orchestratorsRound(ctx context.Context, dir string, n int, failover bool) (OrchestratorsRow, *FailoverResult, error) {
	cfg := m.Orchestrators
	// A server of the round's own, or the one of --nats-url with a prefix
	// of the round's own.
	url, prefix := m.NATSURL, "agent"
	if url == "" {
		srv, err := server.RunEmbedded(server.EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: dir, Sync: m.Sync})
		if err != nil {
			return OrchestratorsRow{}, nil, err
		}
		defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
		url = srv.ClientURL()
	} else {
		prefix = fmt.Sprintf("bench%d", time.Now().UnixNano())
		defer m.dropStreams(url, strings.ToUpper(prefix))
	}
	connect := func(name string) (*bus.Conn, error) {
		return bus.Connect(bus.ConnectConfig{URL: url, Name: name, Logger: m.logger})
	}
	wc, err := connect("fleetbench-worker")
	if err != nil {
		return OrchestratorsRow{}, nil, err
	}
	defer wc.Close()
	ws, err := toolrpc.Serve(wc, toolrpc.ServerConfig{Prefix: prefix, Concurrency: 1024, Heartbeat: time.Second, Tools: []*agentfleet.Tool{echoTool()}})
	if err != nil {
		return OrchestratorsRow{}, nil, err
	}
	defer ws.Stop()
	var orchs []*orchestrator.Orchestrator
	var conns []*bus.Conn
	defer func() {
		for i, o := range orchs {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			o.Close(cctx)
			cancel()
			conns[i].Close()
		}
	}()
	for i := range n {
		nc, err := connect(fmt.Sprintf("fleetbench-orchestrator-%d", i))
		if err != nil {
			return OrchestratorsRow{}, nil, err
		}
		o, err := orchestrator.New(nc, orchestrator.Config{
			Model: latencyModel(cfg.ModelLatency, cfg.LLMConcurrency), Prefix: prefix, Durable: true, LeaseTTL: cfg.LeaseTTL, Logger: m.logger,
			DurableConfig: input.DurableConfig{Replicas: cfg.Replicas},
			Discovery:     fleet.FleetConfig{Wait: 200 * time.Millisecond},
		})
		if err != nil {
			nc.Close()
			return OrchestratorsRow{}, nil, err
		}
		if err := o.Start(ctx); err != nil {
			nc.Close()
			return OrchestratorsRow{}, nil, err
		}
		orchs, conns = append(orchs, o), append(conns, nc)
	}
	// Wait for the table to settle: every partition owned, evenly.
	deadline := time.Now().Add(30 * time.Second)
	for {
		total, even := 0, true
		for _, o := range orchs {
			k := len(o.Partitions())
			total += k
			even = even && (k == bus.Partitions/n || k == bus.Partitions/n+1)
		}
		if total == bus.Partitions && even {
			break
		}
		if time.Now().After(deadline) {
			return OrchestratorsRow{}, nil, fmt.Errorf("%d orchestrators: partitions not settled after 30s", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	client, err := connect("fleetbench-client")
	if err != nil {
		return OrchestratorsRow{}, nil, err
	}
	defer client.Close()
	// Who ran each run, from run.start events.
	var byOrch sync.Map // orchestrator id → *atomic.Int64
	sub, err := client.Subscribe(prefix+".events.*.*.run.start", func(msg *nats.Msg) {
		var e agentfleet.Event
		if json.Unmarshal(msg.Data, &e) == nil {
			c, _ := byOrch.LoadOrStore(e.Orchestrator, new(atomic.Int64))
			c.(*atomic.Int64).Add(1)
		}
	})
	if err != nil {
		return OrchestratorsRow{}, nil, err
	}
	defer sub.Unsubscribe()
	client.Flush()

	askTimeout := 4*cfg.LeaseTTL + 5*time.Second
	var (
		mu        sync.Mutex
		latencies []time.Duration
		lastOK    = map[string]time.Time{} // session → last answer
		gaps      = map[string]time.Duration{}
		runs      atomic.Int64
		measuring atomic.Bool
		cut       atomic.Int64 // unix nanos of the failover
	)
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range cfg.Sessions {
		session := fmt.Sprintf("s%03d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; rctx.Err() == nil; k++ {
				start := time.Now()
				// Bounded: an ask that the killed orchestrator took from
				// the subject but had not yet stored is lost with it, and
				// the client asks again, as any client of agent.ask must.
				actx, acancel := context.WithTimeout(rctx, askTimeout)
				_, err := client.RequestWithContext(actx, prefix+".ask.default."+session, fmt.Appendf(nil, `{"content":"go","id":"%s-%d"}`, session, k))
				acancel()
				if err != nil {
					if rctx.Err() == nil {
						time.Sleep(20 * time.Millisecond) // a request that timed out: ask again
					}
					continue
				}
				now := time.Now()
				mu.Lock()
				if c := cut.Load(); c != 0 {
					if prev := lastOK[session]; prev.UnixNano() < c {
						if g := now.Sub(time.Unix(0, c)); g > gaps[session] {
							gaps[session] = g
						}
					}
				}
				lastOK[session] = now
				if measuring.Load() {
					latencies = append(latencies, now.Sub(start))
				}
				mu.Unlock()
				if measuring.Load() {
					runs.Add(1)
				}
			}
		}()
	}
	// Warm up for a second, then measure.
	time.Sleep(time.Second)
	byOrch.Range(func(k, _ any) bool { byOrch.Delete(k); return true })
	cpu0 := processCPU("self")
	measuring.Store(true)
	start := time.Now()
	var moved []string
	if failover {
		time.Sleep(cfg.Duration / 2)
		victim := orchs[len(orchs)-1]
		owned := map[int]bool{}
		for _, p := range victim.Partitions() {
			owned[p] = true
		}
		for i := range cfg.Sessions {
			if s := fmt.Sprintf("s%03d", i); owned[bus.Partition("default", s)] {
				moved = append(moved, s)
			}
		}
		cut.Store(time.Now().UnixNano())
		conns[len(conns)-1].Close() // no handover: a crash, as the others see it
		orchs, conns = orchs[:len(orchs)-1], conns[:len(conns)-1]
		// Wait until every moved session answered after the cut.
		deadline := time.Now().Add(4*cfg.LeaseTTL + 30*time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			done := 0
			for _, s := range moved {
				if lastOK[s].UnixNano() > cut.Load() {
					done++
				}
			}
			mu.Unlock()
			if done == len(moved) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		go victim.Close(context.Background())
	} else {
		time.Sleep(cfg.Duration)
	}
	elapsed := time.Since(start)
	measuring.Store(false)
	cpu := processCPU("self") - cpu0
	cancel()
	wg.Wait()
	if failover {
		fo := &FailoverResult{Orchestrators: n, Sessions: len(moved)}
		var gs []float64
		for _, s := range moved {
			g, ok := gaps[s]
			if !ok {
				return OrchestratorsRow{}, nil, fmt.Errorf("failover: session %s was not answered after the cut", s)
			}
			gs = append(gs, ms(g))
		}
		slices.Sort(gs)
		if len(gs) > 0 {
			fo.MaxGapMS, fo.MedianGapMS = gs[len(gs)-1], gs[len(gs)/2]
		}
		return OrchestratorsRow{}, fo, nil
	}
	row := OrchestratorsRow{Orchestrators: n, RunsPerSec: float64(runs.Load()) / elapsed.Seconds()}
	if r := runs.Load(); r > 0 {
		row.CPUPerRunUS = float64(cpu.Microseconds()) / float64(r)
	}
	slices.Sort(latencies)
	if len(latencies) > 0 {
		row.P50MS, row.P99MS = ms(latencies[len(latencies)/2]), ms(latencies[len(latencies)*99/100])
	}
	var total int64
	var counts []int64
	byOrch.Range(func(_, v any) bool {
		c := v.(*atomic.Int64).Load()
		counts = append(counts, c)
		total += c
		return true
	})
	for _, c := range counts {
		row.Shares = append(row.Shares, float64(c)/float64(total))
	}
	slices.Sort(row.Shares)
	return row, nil, nil
}

// dropStreams deletes the streams and buckets of a round on a server of
// --nats-url, so that the next round does not share the cluster with them.
func (m *Main) dropStreams(url, name string) {
	nc, err := bus.Connect(bus.ConnectConfig{URL: url, Name: "fleetbench-cleanup", Logger: m.logger})
	if err != nil {
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := js.StreamNames(ctx)
	var drop []string
	for n := range names.Name() {
		if strings.HasPrefix(n, name+"_") || strings.HasPrefix(n, "KV_"+name+"_") {
			drop = append(drop, n)
		}
	}
	for _, n := range drop {
		js.DeleteStream(ctx, n)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func echoTool() *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "echo", Label: "echo", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object"}`), Parallel: true},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult("x"), nil
		}),
	}
}

func (r *OrchestratorsReport) writeTables(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "orchestrators: %d sessions asking in turn, model %v per call (2 calls and 1 tool call per run), %d model calls in flight per orchestrator, streams R%d, %d rounds of %v (medians)\n\n",
		c.Sessions, c.ModelLatency, c.LLMConcurrency, max(c.Replicas, 1), c.Rounds, c.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "orchestrators\truns/s\tspeedup\tCPU/run µs\tp50 ms\tp99 ms\tshares of runs\t")
	for _, row := range r.Rows {
		shares := ""
		for i, s := range row.Shares {
			if i > 0 {
				shares += " "
			}
			shares += fmt.Sprintf("%.2f", s)
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.2f×\t%.0f\t%.1f\t%.1f\t%s\t\n", row.Orchestrators, row.RunsPerSec, row.Speedup, row.CPUPerRunUS, row.P50MS, row.P99MS, shares)
	}
	tw.Flush()
	if f := r.Failover; f != nil {
		fmt.Fprintf(w, "\nfailover: 1 of %d orchestrators cut off without a handover (lease TTL %v): its %d sessions answered again after %.0f ms (median) and %.0f ms (max)\n",
			f.Orchestrators, c.LeaseTTL, f.Sessions, f.MedianGapMS, f.MaxGapMS)
	}
}
