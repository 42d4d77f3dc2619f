package history_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRetainedRecordBeforeThePurge stores three runs and a retained record
// that drops the first: a load leaves the first run out at once, though
// the stream still holds it (Hidden counts it), as a load after an owner
// died between the record and its purge would; the purge then removes
// exactly it from the stream, and the load is the same with nothing
// hidden. Records carry their size and store time.
func TestRetainedRecordBeforeThePurge(t *testing.T) {
	ctx := context.Background()
	st, js, _ := open(t, "w")
	w := st.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	var firsts []uint64
	for _, run := range []string{"r1", "r2", "r3"} {
		seq, err := w.Append(ctx, run, agentfleet.NewUserMessage("question of "+run))
		if err != nil {
			t.Fatal(err)
		}
		firsts = append(firsts, seq)
		if _, err := w.AppendRunEnd(ctx, run, final("answer of "+run)); err != nil {
			t.Fatal(err)
		}
	}
	if n, b := w.Stored(); n != 6 || b == 0 {
		t.Errorf("writer stored %d records, %d bytes; want 6", n, b)
	}
	sum := &agentfleet.ContextSummary{Covers: 0, Text: "r1 was about this"}
	if _, err := w.AppendRetained(ctx, "retain-1", &history.Retained{FirstSeq: firsts[1], Runs: 1, Records: 2, Summary: sum}); err != nil {
		t.Fatal(err)
	}
	check := func(hidden int) *history.Loaded {
		t.Helper()
		l, err := st.Load(ctx, "default", "s")
		if err != nil {
			t.Fatal(err)
		}
		if l.Hidden != hidden || l.RetainedFrom != firsts[1] || len(l.Records) != 5 || l.Records[0].RunID != "r2" {
			t.Fatalf("load: %d records from run %s, %d hidden, retained from %d; want 5 from r2, %d hidden, from %d",
				len(l.Records), l.Records[0].RunID, l.Hidden, l.RetainedFrom, hidden, firsts[1])
		}
		last := l.Records[len(l.Records)-1]
		if last.Retained == nil || last.Retained.Summary.Text != sum.Text || last.Size == 0 || last.Stored.IsZero() {
			t.Fatalf("last record %+v, want the retained record, sized and timed", last)
		}
		return l
	}
	check(2)
	if err := st.Purge(ctx, "default", "s", firsts[1]); err != nil {
		t.Fatal(err)
	}
	check(0)
	s, _ := js.Stream(ctx, history.StreamName(subjectsOf(t)))
	info, err := s.Info(ctx, jetstream.WithSubjectFilter("agent.history.default.s"))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Subjects["agent.history.default.s"]; got != 5 {
		t.Errorf("the stream holds %d messages of the session after the purge, want 5", got)
	}
}

func final(text string) *agentfleet.AssistantMessage {
	return &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text(text)}}
}

func subjectsOf(t *testing.T) bus.Subjects {
	t.Helper()
	s, err := bus.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRetainedRecordHostile stores retained records that are wrong: one
// whose body is not JSON is skipped with an error naming it, and one that
// says to drop past itself drops nothing stored after it.
func TestRetainedRecordHostile(t *testing.T) {
	ctx := context.Background()
	st, js, _ := open(t, "w")
	w := st.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	if _, err := w.Append(ctx, "r1", agentfleet.NewUserMessage("q1")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendRetained(ctx, "retain-1", &history.Retained{FirstSeq: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	seq, err := w.Append(ctx, "r2", agentfleet.NewUserMessage("q2"))
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg("agent.history.default.s")
	m.Header.Set(history.HeaderRecord, history.RecordRetained)
	m.Header.Set(history.HeaderRunID, "retain-2")
	m.Data = []byte("{not json")
	if _, err := js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(seq)); err != nil {
		t.Fatal(err)
	}
	l, err := st.Load(ctx, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Skipped) != 1 || !strings.Contains(l.Skipped[0].Err.Error(), "retained record of run retain-2") {
		t.Errorf("skipped %+v, want the bad retained record named", l.Skipped)
	}
	if len(l.Records) != 2 || l.Records[1].RunID != "r2" || l.Hidden != 1 {
		t.Errorf("load: %d records, %d hidden; want the retained record and r2 kept, r1 hidden", len(l.Records), l.Hidden)
	}
}
