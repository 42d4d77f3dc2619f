package chaos

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/tracing/tracingtest"
)

var flagTraceSeed = flag.Uint64("chaos.trace.seed", 3, "seed of the traced chaos test")

// TestChaosTraces runs the fault test with every orchestrator and tool
// worker exporting traces to an OTLP receiver, and checks the run spans it
// got against the stored history: every span names a stored run; an ended
// span's stop reason is the stored end's (no span ends a run the history
// does not end, nor differently); a run's span, and that of a run resumed
// from the history by another orchestrator too, is the child of the
// traceparent of the first message the run took; and most ended runs have
// their span (spans of a process killed with SIGKILL before it exported
// them are lost).
func TestChaosTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: real processes and faults; skipped with -short")
	}
	recv := tracingtest.NewReceiver(t)
	seed := *flagTraceSeed
	cfg := Config{
		Seed: seed, Sessions: 12, Messages: 50, Duration: 10 * time.Second, Faults: 4,
		Quiesce: 40 * time.Second, BinDir: binaries(t), KeepWorkDir: *flagKeep,
		Orchestrators: 2, NATSNodes: *flagNodes, Logf: t.Logf, TraceEndpoint: recv.URL,
	}
	t.Logf("traced chaos seed %d (rerun with -chaos.trace.seed %d)", seed, seed)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		if v.Count > 0 {
			t.Errorf("seed %d: %d %s; first: %v", seed, v.Count, v.Class, v.Examples)
		}
	}

	// The fleet has stopped: what its processes buffered is exported.
	ended, traced, resumed, unstored := 0, 0, 0, 0
	spanned := map[string]bool{}
	for _, s := range recv.Spans() {
		if s.Service != "agentfleet-orchestrator" || s.Name != "invoke_agent "+agentName {
			continue
		}
		runID, _ := s.Attrs["agentfleet.run.id"].(string)
		stop, _ := s.Attrs["agentfleet.run.stop_reason"].(string)
		sr := rep.StoredRuns[runID]
		if sr == nil && stop == "suspended" {
			// A run its orchestrator began and gave up before it stored
			// anything (its lease in doubt, then lost): the input goes to
			// the next owner, whose run the history holds.
			unstored++
			continue
		}
		if sr == nil {
			t.Errorf("a span of run %q (stop reason %q), which the history does not hold", runID, stop)
			continue
		}
		if stop != "suspended" {
			if string(sr.StopReason) != stop {
				t.Errorf("run %s: its span ended with stop reason %q, the history with %q", runID, stop, sr.StopReason)
			}
			spanned[runID] = true
		}
		if r, _ := s.Attrs["agentfleet.run.resumed"].(bool); r {
			resumed++ // taken over from the history: the same parent
		}
		if len(sr.Inputs) == 0 {
			t.Errorf("run %s: a span, but no user message in the history", runID)
			continue
		}
		wantTrace, wantParent := TraceContextOf(sr.Inputs[0])
		if s.TraceID != wantTrace || s.ParentSpanID != wantParent {
			t.Errorf("run %s: span in trace %s under %s, want the trace of its first message %s: %s under %s",
				runID, s.TraceID, s.ParentSpanID, sr.Inputs[0], wantTrace, wantParent)
		}
	}
	for _, sr := range rep.StoredRuns {
		if sr.StopReason != "" {
			ended++
		}
	}
	for id := range spanned {
		if rep.StoredRuns[id].StopReason != "" {
			traced++
		}
	}
	t.Logf("traced chaos: %d runs ended in the history, %d with an ended span (%d spans of resumed runs, %d of suspended runs that stored nothing), %d faults", ended, traced, resumed, unstored, len(rep.Faults))
	if ended == 0 || traced*2 < ended {
		t.Errorf("only %d of the %d runs the history ends have an ended span", traced, ended)
	}
}
