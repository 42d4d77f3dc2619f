package retention_test

import (
	"context"
	"errors"
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

// TestApplyOnlyTheOwner cuts a stored session of six runs to 5 records
// over a real JetStream: a writer with a stale view (someone wrote since
// it last did) decides nothing, and one whose ownership fence no longer
// holds is refused its retained record; neither removes anything from the
// stream. The owner's cut stores the retained record, purges the runs
// before it, and a load gives what was kept; a second Apply, within the
// bounds, does nothing.
func TestApplyOnlyTheOwner(t *testing.T) {
	ctx := context.Background()
	nc := bustest.MustConnect(t, bustest.MustRunNATS(t))
	js, _ := jetstream.New(nc)
	subjects, _ := bus.NewSubjects("")
	st, err := history.Open(ctx, js, subjects, "o1", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := st.Writer("a", "s", 0, ownership.Unfenced, ownership.Fence{})
	for _, run := range []string{"r1", "r2", "r3", "r4", "r5", "r6"} {
		if _, err := w.Append(ctx, run, agentfleet.NewUserMessage("q "+run)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.AppendRunEnd(ctx, run, answer("a "+run)); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() uint64 {
		s, _ := js.Stream(ctx, history.StreamName(subjects))
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subjects.History("a", "s")))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subjects.History("a", "s")]
	}
	b := retention.Bounds{MaxRecords: 5}

	stale := st.Writer("a", "s", w.Last()-1, ownership.Unfenced, ownership.Fence{})
	res, err := retention.Apply(ctx, st, stale, "a", "s", b, time.Now())
	if err != nil || res.Stored || res.Purged || res.Decision.Why != retention.WhyStale || stored() != 12 {
		t.Fatalf("stale writer: %+v, %v, %d stored; want nothing done", res.Decision, err, stored())
	}

	lost := ownership.CheckerFunc(func(f ownership.Fence) error { return &ownership.FencedError{Fence: f, Owner: "o2"} })
	deposed := st.Writer("a", "s", w.Last(), lost, ownership.Fence{Partition: 1, Owner: "o1"})
	res, err = retention.Apply(ctx, st, deposed, "a", "s", b, time.Now())
	if !errors.Is(err, history.ErrFenced) || res.Stored || res.Purged || stored() != 12 {
		t.Fatalf("deposed owner: %+v, %v, %d stored; want ErrFenced and nothing done", res.Decision, err, stored())
	}

	res, err = retention.Apply(ctx, st, w, "a", "s", b, time.Now())
	if err != nil || !res.Stored || !res.Purged || res.Decision.Retained.Runs != 4 {
		t.Fatalf("owner: %+v, %v; want four runs cut and purged", res.Decision, err)
	}
	if n := stored(); n != 5 {
		t.Errorf("the stream holds %d records of the session, want 2 runs and the retained record", n)
	}
	l, err := st.Load(ctx, "a", "s")
	if err != nil || len(l.Records) != 5 || l.Records[0].RunID != "r5" || l.Hidden != 0 {
		t.Fatalf("load after the cut: %d records from %s (%d hidden), %v", len(l.Records), l.Records[0].RunID, l.Hidden, err)
	}
	res, err = retention.Apply(ctx, st, w, "a", "s", b, time.Now())
	if err != nil || res.Stored || res.Purged || res.Decision.Why != retention.WhyWithin {
		t.Fatalf("second apply: %+v, %v; want nothing to do", res.Decision, err)
	}
}
