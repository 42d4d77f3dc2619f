package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// quotaFleet starts three orchestrator processes on one NATS server whose
// agent "load" uses the endpoint of baseURL with the given limits, waits
// until they share the session partitions, and returns a connection to
// the server.
func quotaFleet(t *testing.T, baseURL, limits string) *nats.Conn {
	t.Helper()
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	config := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(config, []byte(fmt.Sprintf(`endpoints:
  - name: test
    base_url: %s
    models:
      - name: limited
        limits: %s
        price: {input: 1, output: 2}
agents:
  - name: load
    model: limited
`, baseURL, limits)), 0o644)
	args := "--nats-url " + srv.ClientURL() + " --config " + config + " --workers 1 --lease-ttl 2s --log-level info --http 127.0.0.1:0 --dashboard=false --serve-mcp=false --serve-a2a=false"
	var ids []string
	for range 3 {
		_, logs, _ := startLogged(t, args, "orchestrator serving")
		m := servingID.FindStringSubmatch(logs.String())
		if m == nil {
			t.Fatalf("no id in the log:\n%s", logs)
		}
		ids = append(ids, m[1])
	}
	js, _ := jetstream.New(nc)
	owners := partition.Assign(ids, bus.Partitions)
	bustest.Eventually(t, "the partitions shared by the three", func() bool {
		kv, err := js.KeyValue(context.Background(), "AGENT_PARTITIONS")
		if err != nil {
			return false
		}
		for p, want := range owners {
			e, err := kv.Get(context.Background(), strconv.Itoa(p))
			if err != nil || string(e.Value()) != want {
				return false
			}
		}
		return true
	})
	return nc
}

// load sends n messages to n sessions of agent load and returns the
// subscription of their final messages and of the run.start events.
func load(t *testing.T, nc *nats.Conn, n int) (out, starts *nats.Subscription) {
	t.Helper()
	out, _ = nc.SubscribeSync("agent.out.load.*")
	starts, _ = nc.SubscribeSync("agent.events.load.*.run.start")
	nc.Flush()
	for i := range n {
		if err := nc.Publish(fmt.Sprintf("agent.in.load.q%d", i), []byte(fmt.Sprintf(`{"content":"hello %d","id":"q-%d"}`, i, i))); err != nil {
			t.Fatal(err)
		}
	}
	return out, starts
}

// maxInWindow returns the most times that fall in any window of d.
func maxInWindow(times []time.Time, d time.Duration) int {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	best := 0
	for i := range times {
		n := 0
		for _, u := range times[i:] {
			if u.Sub(times[i]) >= d {
				break
			}
			n++
		}
		best = max(best, n)
	}
	return best
}

// TestFleetQuotaThreeProcesses: three orchestrator processes share one
// limit of 10 requests per second (rpm 600, burst 3) of a model whose
// server answers 429 above 14 in a second. 80 runs, spread over the three,
// make 80 requests: none is refused, and no window of a second holds more
// than 10 + the burst + 1 (a refill that a second splits).
func TestFleetQuotaThreeProcesses(t *testing.T) {
	model := llmtest.NewRateServer(t, 14, "1", llmtest.TextReply("ok"))
	nc := quotaFleet(t, model.BaseURL(), "{rpm: 600}")
	const runs = 80
	waits, _ := nc.SubscribeSync("agent.events.load.*.model.waiting")
	began := time.Now()
	out, starts := load(t, nc, runs)
	for i := range runs {
		if _, err := out.NextMsg(60 * time.Second); err != nil {
			t.Fatalf("final message %d of %d: %v", i+1, runs, err)
		}
	}
	took := time.Since(began)
	orchs := map[string]int{}
	for range runs {
		m, err := starts.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		orchs[decodeEvent(t, m).Orchestrator]++
	}
	if len(orchs) != 3 {
		t.Errorf("runs by orchestrator %v, want all three", orchs)
	}
	// Calls that waited said so, with the reason.
	m, err := waits.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no model.waiting event: %v", err)
	}
	if e := decodeEvent(t, m); e.Model != "limited" || (e.Reason != "rate_requests" && e.Reason != "queued") || e.RunID == "" {
		t.Errorf("model.waiting %+v, want model limited waiting for requests", e)
	}
	arrivals := model.Arrivals()
	if len(arrivals) != runs {
		t.Errorf("the model got %d requests, want %d", len(arrivals), runs)
	}
	if r := model.Rejected(); len(r) > 0 {
		t.Errorf("%d requests refused with 429: the fleet passed the limit", len(r))
	}
	if n := maxInWindow(arrivals, time.Second); n > 10+3+1 {
		t.Errorf("%d requests in one second, want at most 14 (10/s + burst 3 + 1)", n)
	}
	t.Logf("%d runs on %v in %v; requests per wall second %v; at most %d in any second", runs, orchs, took.Round(time.Millisecond), perSecond(arrivals), maxInWindow(arrivals, time.Second))
}

// perSecond lists the counts of times per wall second, in order.
func perSecond(times []time.Time) []int {
	m := llmtest.PerSecond(times)
	var secs []int64
	for s := range m {
		secs = append(secs, s)
	}
	slices.Sort(secs)
	var out []int
	for _, s := range secs {
		out = append(out, m[s])
	}
	return out
}

// TestFleetQuota429PausesAll: the shared limit (10/s) is above what the
// model's server takes (4 in a second, then 429 with Retry-After 2): the
// first 429 that any of the three orchestrators sees pauses them all, so
// the server receives nothing from the half second after it until the
// pause is almost over.
func TestFleetQuota429PausesAll(t *testing.T) {
	model := llmtest.NewRateServer(t, 4, "2", llmtest.TextReply("ok"))
	nc := quotaFleet(t, model.BaseURL(), "{rpm: 600}")
	out, _ := load(t, nc, 40)
	bustest.Eventually(t, "a 429", func() bool { return len(model.Rejected()) > 0 })
	first := model.Rejected()[0]
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && time.Since(first) < 3*time.Second {
		out.NextMsg(200 * time.Millisecond) // the runs go on meanwhile
	}
	var during []time.Duration
	for _, a := range model.Arrivals() {
		if d := a.Sub(first); d > 500*time.Millisecond && d < 1500*time.Millisecond {
			during = append(during, d)
		}
	}
	if len(during) > 0 {
		t.Errorf("%d requests during the fleet's pause (after the first 429 by %v)", len(during), during)
	}
	after := 0
	for _, a := range model.Arrivals() {
		if a.Sub(first) >= 1500*time.Millisecond {
			after++
		}
	}
	if after == 0 {
		t.Error("no request after the pause: the fleet did not go on")
	}
	t.Logf("429s: %d of %d requests; requests per wall second %v", len(model.Rejected()), model.Count(), perSecond(model.Arrivals()))
	_ = agentfleet.EventRunEnd
}
