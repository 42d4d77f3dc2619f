package history_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/nats-io/nats.go/jetstream"
)

// joinTable joins member id to the partition table of js, serving nothing.
func joinTable(t *testing.T, js jetstream.JetStream, id string) *partition.Table {
	t.Helper()
	subjects, _ := bus.NewSubjects("")
	tb, err := partition.New(context.Background(), js, subjects, id, partition.Config{
		TTL: time.Second, Acquire: func(context.Context, int) error { return nil }, Release: func(int) {}, Lost: func(error) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Leave() })
	return tb
}

// sessionOf returns a session name of agent default in partition p.
func sessionOf(p int) string {
	for i := 0; ; i++ {
		if s := fmt.Sprintf("s%d", i); bus.Partition("default", s) == p {
			return s
		}
	}
}

// TestWriterWithAStaleFence writes a session under the fence of its
// partition while one orchestrator owns every partition, then has a second
// join and take the session's partition over: the first writer's next
// append is refused with a FencedError naming the new owner, although
// nobody wrote the session since (the store's own fence would let it
// through), and nothing of it is stored. The new owner's writer, under its
// own fence, appends.
func TestWriterWithAStaleFence(t *testing.T) {
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
	if _, err := w.Append(ctx, "r1", agentfleet.NewUserMessage("one")); err != nil {
		t.Fatal(err)
	}

	njs := js // one connection serves both members here
	subjects, _ := bus.NewSubjects("")
	newer, err := history.Open(ctx, njs, subjects, "new", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	taker := joinTable(t, njs, "new")
	var nf ownership.Fence
	bustest.Eventually(t, "the new member to own the session's partition", func() bool {
		nf, ok = taker.Fence(p)
		return ok
	})
	bustest.Eventually(t, "the old member to see the claim", func() bool {
		var fe *ownership.FencedError
		return errors.As(old.Check(f), &fe) && fe.Owner == "new"
	})

	_, err = w.Append(ctx, "r1", agentfleet.NewUserMessage("two"))
	var fe *ownership.FencedError
	if !errors.Is(err, history.ErrFenced) || !errors.As(err, &fe) {
		t.Fatalf("append under the stale fence: %v, want ErrFenced with a FencedError", err)
	}
	if fe.Fence != f || fe.Owner != "new" || fe.Epoch != nf.Epoch {
		t.Errorf("FencedError %+v, want fence %v, owner new at epoch %d", *fe, f, nf.Epoch)
	}
	loaded, err := newer.Load(ctx, "default", session)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Records) != 1 {
		t.Fatalf("%d records stored, want the 1 written before the handover", len(loaded.Records))
	}
	nw := newer.Writer("default", session, loaded.LastSeq, taker, nf)
	if _, err := nw.Append(ctx, "r1", agentfleet.NewUserMessage("from the new owner")); err != nil {
		t.Fatalf("append of the new owner: %v", err)
	}
}
