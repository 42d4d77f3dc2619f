package retention_test

import (
	"context"
	"fmt"
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

// BenchmarkApply is the cost a run's end pays once its session is at its
// bound (embedded server, file storage): each iteration stores one run
// (a user message and its end, not timed) past max_records, then times
// the cut that brings the session back within it: a load of the
// session, the decision, the retained record, the purge.
//
//	go test -run '^$' -bench BenchmarkApply -benchtime 50x ./internal/retention/
func BenchmarkApply(b *testing.B) {
	for _, bound := range []int{100, 1000} {
		b.Run(fmt.Sprintf("max_records=%d", bound), func(b *testing.B) {
			ctx := context.Background()
			nc := bustest.MustConnect(b, bustest.MustRunNATS(b))
			js, _ := jetstream.New(nc)
			subjects, _ := bus.NewSubjects("")
			st, err := history.Open(ctx, js, subjects, "o1", history.Config{})
			if err != nil {
				b.Fatal(err)
			}
			w := st.Writer("a", "s", 0, ownership.Unfenced, ownership.Fence{})
			run := 0
			addRun := func() {
				id := fmt.Sprintf("r%d", run)
				run++
				if _, err := w.Append(ctx, id, agentfleet.NewUserMessage("a question of some length, as a user would write it")); err != nil {
					b.Fatal(err)
				}
				if _, err := w.AppendRunEnd(ctx, id, answer("an answer")); err != nil {
					b.Fatal(err)
				}
			}
			for range bound / 2 {
				addRun()
			}
			bounds := retention.Bounds{MaxRecords: bound}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				addRun()
				b.StartTimer()
				res, err := retention.Apply(ctx, st, w, "a", "s", bounds, time.Now())
				if err != nil || !res.Stored {
					b.Fatalf("%+v, %v", res.Decision, err)
				}
			}
		})
	}
}

// BenchmarkCut is the decision alone, over a history of 10,000 records.
func BenchmarkCut(b *testing.B) {
	h := runs(0)
	for i := range 3334 {
		h.run(fmt.Sprint(i), i, true)
	}
	now := t0.Add(time.Hour)
	for range b.N {
		if d := retention.Cut(h.recs, h.last(), retention.Bounds{MaxRecords: 1000}, now); !d.Met {
			b.Fatal(d.Why)
		}
	}
}
