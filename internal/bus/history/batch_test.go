package history_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/nats-io/nats.go/jetstream"
)

// storedCount is how many messages the history stream holds.
func storedCount(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	subjects, _ := bus.NewSubjects("")
	st, err := js.Stream(context.Background(), history.StreamName(subjects))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func say(text string) *agentfleet.AssistantMessage {
	return &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text(text)}}
}

// TestWriterFlushesOneMessage buffers a run's records and flushes them: the
// stream holds one message, and Load gives the records in order, each
// named by that message's sequence and its index in it. A flush of one
// record stores a plain record, and a flush of nothing stores nothing.
func TestWriterFlushesOneMessage(t *testing.T) {
	ctx := context.Background()
	st, js, _ := open(t, "w1")
	w := st.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	for _, r := range []history.Record{
		{RunID: "r1", Message: agentfleet.NewUserMessage("one")},
		{RunID: "r1", Message: say("two")},
	} {
		if err := w.Buffer(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got := storedCount(t, js); got != 0 {
		t.Fatalf("%d messages stored before the flush, want 0", got)
	}
	seq, err := w.AppendRunEnd(ctx, "r1", say("two"))
	if err != nil {
		t.Fatal(err)
	}
	if got := storedCount(t, js); got != 1 {
		t.Fatalf("%d messages stored, want 1", got)
	}
	if _, err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, "r2", agentfleet.NewUserMessage("three")); err != nil {
		t.Fatal(err)
	}
	if got := storedCount(t, js); got != 2 {
		t.Fatalf("%d messages stored after an empty flush and one append, want 2", got)
	}
	loaded, err := st.Load(ctx, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Skipped) != 0 {
		t.Fatalf("skipped %v", loaded.Skipped)
	}
	type place struct {
		seq   uint64
		index int
		run   string
	}
	var got []place
	for _, r := range loaded.Records {
		got = append(got, place{r.Seq, r.Index, r.RunID})
	}
	want := []place{{seq, 0, "r1"}, {seq, 1, "r1"}, {seq, 2, "r1"}, {seq + 1, 0, "r2"}}
	if !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
	if loaded.Records[2].Final == nil || loaded.Ended()["r1"] != 1 {
		t.Errorf("the run end did not load: %+v", loaded.Records[2])
	}
	if loaded.LastSeq != seq+1 || w.Last() != seq+1 {
		t.Errorf("last seq loaded %d, writer %d, want %d", loaded.LastSeq, w.Last(), seq+1)
	}
}

// TestBufferedWriterIsFenced buffers records in a writer, has another
// writer take the session, and flushes: the flush fails with ErrFenced,
// nothing of the buffer is stored, and the writer buffers nothing more.
func TestBufferedWriterIsFenced(t *testing.T) {
	ctx := context.Background()
	st, js, _ := open(t, "old")
	subjects, _ := bus.NewSubjects("")
	newer, err := history.Open(ctx, js, subjects, "new", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	old := st.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	if err := old.Buffer(ctx, history.Record{RunID: "r1", Message: agentfleet.NewUserMessage("one")}); err != nil {
		t.Fatal(err)
	}
	if err := old.Buffer(ctx, history.Record{RunID: "r1", Message: say("from the old one")}); err != nil {
		t.Fatal(err)
	}
	taker := newer.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	if _, err := taker.Append(ctx, "r1", agentfleet.NewUserMessage("one")); err != nil {
		t.Fatal(err)
	}
	if _, err := old.AppendRunEnd(ctx, "r1", say("from the old one")); !errors.Is(err, history.ErrFenced) {
		t.Fatalf("flush after the takeover: %v, want ErrFenced", err)
	}
	if got := old.Buffered(); got != 0 {
		t.Errorf("the fenced writer still buffers %d records", got)
	}
	if err := old.Buffer(ctx, history.Record{RunID: "r1", Message: say("more")}); !errors.Is(err, history.ErrFenced) {
		t.Errorf("buffer after the fence: %v, want ErrFenced", err)
	}
	if got := storedCount(t, js); got != 1 {
		t.Errorf("%d messages stored, want only the new writer's", got)
	}
}

// TestBufferedWriterWithAStaleFence buffers records under the ownership
// fence of the session's partition, moves the partition to another member,
// and flushes: the flush is refused with a FencedError before anything is
// published, although nobody wrote the session since.
func TestBufferedWriterWithAStaleFence(t *testing.T) {
	ctx := context.Background()
	st, js, _ := open(t, "old")
	old := joinTable(t, js, "old")
	p := slices.Index(partition.Assign([]string{"new", "old"}, bus.Partitions), "new")
	session := sessionOf(p)
	f, ok := old.Fence(p)
	if !ok {
		t.Fatalf("the only member does not own partition %d", p)
	}
	w := st.Writer("default", session, 0, old, f)
	for _, text := range []string{"one", "two"} {
		if err := w.Buffer(ctx, history.Record{RunID: "r1", Message: agentfleet.NewUserMessage(text)}); err != nil {
			t.Fatal(err)
		}
	}
	joinTable(t, js, "new")
	bustest.Eventually(t, "the old member to see the claim", func() bool {
		var fe *ownership.FencedError
		return errors.As(old.Check(f), &fe) && fe.Owner == "new"
	})
	_, err := w.Flush(ctx)
	var fe *ownership.FencedError
	if !errors.Is(err, history.ErrFenced) || !errors.As(err, &fe) {
		t.Fatalf("flush under the stale fence: %v, want ErrFenced with a FencedError", err)
	}
	if got := storedCount(t, js); got != 0 {
		t.Errorf("%d messages stored after the fence moved, want 0", got)
	}
}

// TestWriterFlushesWhenFull buffers more records than one envelope holds:
// the buffer is flushed as it fills, and every record loads.
func TestWriterFlushesWhenFull(t *testing.T) {
	ctx := context.Background()
	st, js, _ := open(t, "w1")
	w := st.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	n := history.MaxEnvelopeRecords + 10
	for i := range n {
		if err := w.Buffer(ctx, history.Record{RunID: "r1", Message: say(fmt.Sprintf("x%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := storedCount(t, js); got != 2 {
		t.Errorf("%d messages stored, want 2", got)
	}
	loaded, err := st.Load(ctx, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Records) != n || len(loaded.Skipped) != 0 {
		t.Fatalf("%d records loaded, %d skipped, want %d and 0", len(loaded.Records), len(loaded.Skipped), n)
	}
	// The record that filled the buffer was encoded before the flush it
	// caused, and is stored whole after it.
	for i, r := range loaded.Records {
		if got := agentfleet.JoinText(r.Message.(*agentfleet.AssistantMessage).Content); got != fmt.Sprintf("x%d", i) {
			t.Fatalf("record %d holds %q", i, got)
		}
	}
}

// TestPooledBatches has writers of several sessions flush runs of records
// of different sizes in turn, so that each flush takes a batch another one
// released: every session loads exactly what it stored.
func TestPooledBatches(t *testing.T) {
	ctx := context.Background()
	st, _, _ := open(t, "w1")
	const sessions, runs = 4, 6
	ws := make([]*history.Writer, sessions)
	for i := range ws {
		ws[i] = st.Writer("default", fmt.Sprintf("s%d", i), 0, ownership.Unfenced, ownership.Fence{})
	}
	text := func(s, r, k int) string {
		return strings.Repeat(fmt.Sprintf("s%d-r%d-m%d;", s, r, k), 1+(s*7+r*3+k)%50)
	}
	for r := range runs {
		for s, w := range ws {
			for k := range 1 + (s+r)%4 {
				if err := w.Buffer(ctx, history.Record{RunID: fmt.Sprintf("r%d", r), Message: say(text(s, r, k))}); err != nil {
					t.Fatal(err)
				}
			}
			end := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text(text(s, r, 99))}}
			if _, err := w.AppendRunEnd(ctx, fmt.Sprintf("r%d", r), end); err != nil {
				t.Fatal(err)
			}
		}
	}
	for s := range ws {
		loaded, err := st.Load(ctx, "default", fmt.Sprintf("s%d", s))
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for r := range runs {
			for k := range 1 + (s+r)%4 {
				want = append(want, text(s, r, k))
			}
			want = append(want, text(s, r, 99))
		}
		for _, rec := range loaded.Records {
			switch {
			case rec.Message != nil:
				got = append(got, agentfleet.JoinText(rec.Message.(*agentfleet.AssistantMessage).Content))
			case rec.Final != nil:
				got = append(got, agentfleet.JoinText(rec.Final.Content))
			}
		}
		if !slices.Equal(got, want) || len(loaded.Skipped) > 0 {
			t.Errorf("session s%d loaded %d records (%d skipped), want %d:\n got %q\nwant %q", s, len(got), len(loaded.Skipped), len(want), got, want)
		}
	}
}
