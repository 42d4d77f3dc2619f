package history_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/retention"
)

// BenchmarkLoad loads one session of n records (plain records, as a
// history written before envelopes or of one message a flush) from a
// stream that also holds others sessions of 4 records each (or of
// otherLen), interleaved with it: the time of one Load against the
// history's length and against the rest of the stream. With bound, the
// session's n records are written as runs of a user message and a run
// end, and cut to max_records bound (retention.Apply, which purges
// them) before it is loaded.
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 20x ./internal/bus/history/
func BenchmarkLoad(b *testing.B) {
	for _, c := range []struct{ records, others, otherLen, bound int }{
		{100, 0, 0, 0}, {1000, 0, 0, 0}, {10000, 0, 0, 0},
		{100, 1000, 4, 0}, {100, 10000, 4, 0},
		{100, 1, 10000, 0},  // a new session beside a long one
		{10000, 0, 0, 1000}, // a long session bounded by retention
	} {
		name := fmt.Sprintf("records=%d/others=%d", c.records, c.others)
		if c.otherLen != 4 && c.others > 0 {
			name += fmt.Sprintf("x%d", c.otherLen)
		}
		if c.bound > 0 {
			name += fmt.Sprintf("/bound=%d", c.bound)
		}
		b.Run(name, func(b *testing.B) {
			st, _, _ := open(b, "w")
			ctx := context.Background()
			w := st.Writer("default", "target", 0, ownership.Unfenced, ownership.Fence{})
			others := make([]*history.Writer, c.others)
			for i := range others {
				others[i] = st.Writer("default", fmt.Sprintf("other-%d", i), 0, ownership.Unfenced, ownership.Fence{})
			}
			msg := agentfleet.NewUserMessage("a message of some length, as a user would write it")
			end := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("an answer")}}
			for i := range max(c.records, c.others*c.otherLen) {
				if i < c.records {
					var err error
					switch {
					case c.bound == 0:
						_, err = w.Append(ctx, "run", msg)
					case i%2 == 0:
						_, err = w.Append(ctx, fmt.Sprintf("run-%d", i/2), msg)
					default:
						_, err = w.AppendRunEnd(ctx, fmt.Sprintf("run-%d", i/2), end)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if c.others > 0 && i < c.others*c.otherLen {
					if _, err := others[i%c.others].Append(ctx, "run", msg); err != nil {
						b.Fatal(err)
					}
				}
			}
			want := c.records
			if c.bound > 0 {
				res, err := retention.Apply(ctx, st, w, "default", "target", retention.Bounds{MaxRecords: c.bound}, time.Now())
				if err != nil || !res.Purged {
					b.Fatalf("cut: %+v, %v", res.Decision, err)
				}
				want = res.Decision.Kept.Records
			}
			b.ResetTimer()
			for range b.N {
				l, err := st.Load(ctx, "default", "target")
				if err != nil || len(l.Records) != want {
					b.Fatalf("%d records, %v", len(l.Records), err)
				}
			}
		})
	}
}
