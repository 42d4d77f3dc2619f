package retention_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/retention"
	"github.com/nats-io/nats.go/jetstream"
)

// TestKeeperAfterACrashAndAFailure has an owner store a retained record
// and die before its purge: the next owner's keeper, though the history
// it loads is within its bounds, purges what the record dropped. A cut
// that fails (the store does not answer in time) stores nothing and
// leaves the stream as it was; the next run's end cuts.
func TestKeeperAfterACrashAndAFailure(t *testing.T) {
	ctx := context.Background()
	nc := bustest.MustConnect(t, bustest.MustRunNATS(t))
	js, _ := jetstream.New(nc)
	subjects, _ := bus.NewSubjects("")
	st, err := history.Open(ctx, js, subjects, "o1", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := st.Writer("a", "s", 0, ownership.Unfenced, ownership.Fence{})
	var firsts []uint64
	addRun := func(id string) {
		t.Helper()
		seq, err := w.Append(ctx, id, agentfleet.NewUserMessage("q "+id))
		if err != nil {
			t.Fatal(err)
		}
		firsts = append(firsts, seq)
		if _, err := w.AppendRunEnd(ctx, id, answer("a "+id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		addRun(id)
	}
	stored := func() uint64 {
		s, _ := js.Stream(ctx, history.StreamName(subjects))
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subjects.History("a", "s")))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subjects.History("a", "s")]
	}
	// The first owner cut r1 and died before its purge.
	if _, err := w.AppendRetained(ctx, "retain-1", &history.Retained{FirstSeq: firsts[1], Runs: 1, Records: 2}); err != nil {
		t.Fatal(err)
	}
	l, err := st.Load(ctx, "a", "s")
	if err != nil || l.Hidden != 2 {
		t.Fatalf("load: %d hidden, %v", l.Hidden, err)
	}
	next := st.Writer("a", "s", l.LastSeq, ownership.Unfenced, ownership.Fence{})
	k := retention.NewKeeper(st, "a", "s", retention.Bounds{MaxRecords: 10}, l, slog.Default())
	res, err := k.After(ctx, next, time.Now())
	if err != nil || res.Stored || !res.Purged || stored() != 5 {
		t.Fatalf("the next owner's keeper: %+v, %v, %d stored; want the leftovers purged, nothing cut", res.Decision, err, stored())
	}
	if retention.NewKeeper(st, "a", "s", retention.Bounds{}, l, slog.Default()) != nil {
		t.Error("a keeper without bounds")
	}

	// Past the bound, a cut whose store does not answer in time.
	w = next
	for _, id := range []string{"r4", "r5", "r6"} {
		addRun(id)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	before := stored()
	res, err = k.After(done, w, time.Now())
	if err == nil || res.Stored || stored() != before {
		t.Fatalf("a cut that failed: %+v, %v, %d stored of %d", res.Decision, err, stored(), before)
	}
	res, err = k.After(ctx, w, time.Now())
	if err != nil || !res.Stored || !res.Purged || !res.Decision.Met {
		t.Fatalf("the cut after: %+v, %v", res.Decision, err)
	}
	if n := stored(); n > 10 {
		t.Errorf("%d records stored, bound 10", n)
	}
}
