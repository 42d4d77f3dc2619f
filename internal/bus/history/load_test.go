package history_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
)

// TestLoadLeavesNoConsumers loads sessions with short and long histories
// (the long ones past the records read by direct gets): every record comes
// back in order, from the sessions' own subjects, and no consumer is left
// on the server, however many sessions were loaded.
func TestLoadLeavesNoConsumers(t *testing.T) {
	st, js, _ := open(t, "w")
	ctx := context.Background()
	sizes := map[string]int{"short": 3, "edge": 64, "long": 150}
	for session, n := range sizes {
		w := st.Writer("default", session, 0, ownership.Unfenced, ownership.Fence{})
		for i := range n {
			if _, err := w.Append(ctx, "run-"+session, &agentfleet.UserMessage{Role: agentfleet.RoleUser, Content: []agentfleet.Content{agentfleet.Text(fmt.Sprintf("%s %d", session, i))}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 3 {
		for session, n := range sizes {
			l, err := st.Load(ctx, "default", session)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Records) != n {
				t.Fatalf("session %s: %d records, want %d", session, len(l.Records), n)
			}
			for i, r := range l.Records {
				u, ok := r.Message.(*agentfleet.UserMessage)
				if !ok || agentfleet.JoinText(u.Content) != fmt.Sprintf("%s %d", session, i) {
					t.Fatalf("session %s: record %d is %+v", session, i, r.Message)
				}
			}
			if l.LastSeq != l.Records[n-1].Seq {
				t.Errorf("session %s: LastSeq %d, last record %d", session, l.LastSeq, l.Records[n-1].Seq)
			}
		}
	}
	stream, err := js.Stream(ctx, "AGENT_HISTORY")
	if err != nil {
		t.Fatal(err)
	}
	// The ordered consumer that reads a long history's rest may have
	// replaced its server consumer between fetches; jetstream deletes a
	// replaced one in the background, so the count goes to 0 shortly
	// after the loads, well before the consumers' 30 s inactive threshold.
	bustest.Eventually(t, "no consumer left on the history stream after the loads", func() bool {
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Consumers == 0
	})
}

// TestSummaryRecord stores a summary between messages: it loads as a
// summary record, not a message, and a writer fenced by another's append
// cannot store one.
func TestSummaryRecord(t *testing.T) {
	st, _, _ := open(t, "w")
	ctx := context.Background()
	w := st.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	if _, err := w.Append(ctx, "r1", agentfleet.NewUserMessage("hi")); err != nil {
		t.Fatal(err)
	}
	stale := st.Writer("default", "s", w.Last(), ownership.Unfenced, ownership.Fence{})
	sum := &agentfleet.ContextSummary{Covers: 1, Text: "the user said hi", Usage: &agentfleet.Usage{InputTokens: 7, OutputTokens: 3}}
	if _, err := w.AppendSummary(ctx, "r2", sum); err != nil {
		t.Fatal(err)
	}
	if _, err := stale.AppendSummary(ctx, "r2", sum); !errors.Is(err, history.ErrFenced) {
		t.Errorf("a stale writer's summary: %v, want ErrFenced", err)
	}
	l, err := st.Load(ctx, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Records) != 2 || l.Records[1].Summary == nil || l.Records[1].Message != nil || len(l.Messages()) != 1 {
		t.Fatalf("records %+v, want a message and a summary", l.Records)
	}
	if got := l.Records[1].Summary; got.Covers != 1 || got.Text != sum.Text || got.Usage.InputTokens != 7 || l.Records[1].RunID != "r2" {
		t.Errorf("summary %+v of run %s", got, l.Records[1].RunID)
	}
}
