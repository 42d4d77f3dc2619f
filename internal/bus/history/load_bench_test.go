package history_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
)

// BenchmarkLoad loads one session of n records (plain records, as a
// history written before envelopes or of one message a flush) from a
// stream that also holds others sessions of 4 records each, interleaved
// with it: the time of one Load against the history's length and against
// the rest of the stream.
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 20x ./internal/bus/history/
func BenchmarkLoad(b *testing.B) {
	for _, c := range []struct{ records, others int }{
		{100, 0}, {1000, 0}, {10000, 0},
		{100, 1000}, {100, 10000},
	} {
		b.Run(fmt.Sprintf("records=%d/others=%d", c.records, c.others), func(b *testing.B) {
			st, _, _ := open(b, "w")
			ctx := context.Background()
			w := st.Writer("default", "target", 0, ownership.Unfenced, ownership.Fence{})
			others := make([]*history.Writer, c.others)
			for i := range others {
				others[i] = st.Writer("default", fmt.Sprintf("other-%d", i), 0, ownership.Unfenced, ownership.Fence{})
			}
			msg := agentfleet.NewUserMessage("a message of some length, as a user would write it")
			for i := range max(c.records, c.others*4) {
				if i < c.records {
					if _, err := w.Append(ctx, "run", msg); err != nil {
						b.Fatal(err)
					}
				}
				if c.others > 0 && i < c.others*4 {
					if _, err := others[i%c.others].Append(ctx, "run", msg); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			for range b.N {
				l, err := st.Load(ctx, "default", "target")
				if err != nil || len(l.Records) != c.records {
					b.Fatalf("%d records, %v", len(l.Records), err)
				}
			}
		})
	}
}
