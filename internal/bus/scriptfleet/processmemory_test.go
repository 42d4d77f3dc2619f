package scriptfleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/script/procmem"
)

// hungryCode holds 40 MiB while it waits in call_tool('hold').
const hungryCode = "def execute(args):\n    s = 'x' * 41943040\n    r = call_tool('hold', {})\n    return str(len(s)) + r\n"

// hungryRun is what runHungry saw.
type hungryRun struct {
	holding  int    // hungry calls running at once, each holding 40 MiB
	busy     int64  // calls refused as busy by then
	heap     uint64 // the process's heap in use then
	rss      string // and its resident set (Linux), as /proc says it
	peak     int64  // the most the budget reserved
	finished int    // calls that ended with their result
}

// runHungry sends n hungry calls at once to a script worker with the given
// process budget, waits until want of them run at once (and, when refused
// is set, until calls were refused as busy), then lets them all finish.
func runHungry(t *testing.T, memory *procmem.ProcessMemory, n, want int, refused bool) hungryRun {
	ctx := testContext(t)
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	var holding atomic.Int64
	release := make(chan struct{})
	hold, err := toolrpc.Serve(bustest.MustConnect(t, s), toolrpc.ServerConfig{Logger: quietLog, Tools: []*agentfleet.Tool{{
		ToolDef: agentfleet.ToolDef{Name: "hold", Description: "waits until released"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
			holding.Add(1)
			defer holding.Add(-1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return agentfleet.TextResult(" held"), nil
		}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hold.Stop() })
	var busy atomic.Int64
	changes := make(chan map[string]uint64, 16)
	srv, err := scriptfleet.Serve(ctx, bustest.MustConnect(t, s), scriptfleet.ServerConfig{
		Logger: quietLog, Heartbeat: time.Second, Memory: memory,
		Env: script.Env{Timeout: 60 * time.Second},
		Observe: func(tool, outcome string, _ time.Duration) {
			if tool == "hungry" && outcome == "busy" {
				busy.Add(1)
			}
		},
		OnChange: func(served map[string]uint64) { changes <- served },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	rev, err := srv.Store().Put(ctx, &script.Definition{Name: "hungry", Description: "holds 40 MiB", InputSchema: json.RawMessage(`{"type":"object"}`), Code: hungryCode})
	if err != nil {
		t.Fatal(err)
	}
	(&scriptWorker{srv: srv, changes: changes}).await(t, map[string]uint64{"hungry": rev})
	// What is measured is memory, not liveness: a worker slowed by the
	// race detector on a loaded machine, 16 scripts of 40 MiB each, must
	// not be given up for lost.
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{AckTimeout: 60 * time.Second, HeartbeatMisses: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		finished int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := fleetexec.Executor{Client: client}.Execute(ctx, &pipeline.Prepared{
				Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "hungry", Scripted: true}},
				Call: agentfleet.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "hungry"}, Timeout: 120 * time.Second,
				Agent: "a", Allowed: []string{"hungry", "hold"},
			}, func(any) {})
			if err != nil {
				t.Errorf("hungry %d: %v", i, err)
				return
			}
			if got := agentfleet.JoinText(res.Content); got != "41943040 held" {
				t.Errorf("hungry %d = %q", i, got)
				return
			}
			mu.Lock()
			finished++
			mu.Unlock()
		}()
	}
	bustest.Eventually(t, strconv.Itoa(want)+" hungry calls running at once", func() bool { return holding.Load() >= int64(want) })
	if refused {
		bustest.Eventually(t, "a call refused as busy", func() bool { return busy.Load() > 0 })
	}
	run := hungryRun{holding: int(holding.Load()), busy: busy.Load()}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	run.heap = ms.HeapInuse
	run.rss = residentSet()
	close(release)
	wg.Wait()
	run.peak, run.finished = memory.Peak(), finished
	return run
}

// TestProcessMemoryBoundsConcurrentScripts: 16 scripts that each hold 40
// MiB, sent at once to a worker whose scripts share 256 MiB with the
// default 64 MiB per call: 4 run at once, the others are refused as busy
// and sent again by the client, the reservations never pass the budget,
// and every call ends with its result.
func TestProcessMemoryBoundsConcurrentScripts(t *testing.T) {
	memory := procmem.NewProcessMemory(256 << 20)
	run := runHungry(t, memory, 16, 4, true)
	if run.holding != 4 {
		t.Errorf("%d hungry calls ran at once, want the 4 the budget holds", run.holding)
	}
	if run.peak > memory.Total() {
		t.Errorf("reserved %d bytes at most, over the budget of %d", run.peak, memory.Total())
	}
	if run.finished != 16 {
		t.Errorf("%d calls finished, want 16: refused calls are sent again", run.finished)
	}
	// A call gives its reservation back when its handler has ended, just
	// after its result was sent: wait for the last one.
	bustest.Eventually(t, "every reservation given back", func() bool { return memory.Reserved() == 0 })
	t.Logf("budget 256 MiB: %d calls at once, peak reserved %d MiB, heap in use %d MiB, resident %s, %d busy refusals", run.holding, run.peak>>20, run.heap>>20, run.rss, run.busy)
}

// TestMeasureUnboundedScripts measures the same load with a budget of 16
// calls, as every call could run at once before the process budget. Run
// it with AGENTFLEET_MEASURE=N, the number of calls (at most 16).
func TestMeasureUnboundedScripts(t *testing.T) {
	if os.Getenv("AGENTFLEET_MEASURE") == "" {
		t.Skip("a measurement: set AGENTFLEET_MEASURE=1")
	}
	memory := procmem.NewProcessMemory(16 * script.DefaultMaxMemory)
	n, _ := strconv.Atoi(os.Getenv("AGENTFLEET_MEASURE"))
	run := runHungry(t, memory, n, n, false)
	t.Logf("budget of 16 calls: %d calls at once, peak reserved %d MiB, heap in use %d MiB, resident %s", run.holding, run.peak>>20, run.heap>>20, run.rss)
}

// residentSet returns the VmRSS line of /proc/self/status, "" elsewhere.
func residentSet() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
