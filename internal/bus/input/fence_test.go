package input_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/nats-io/nats.go/jetstream"
)

// TestAckOfAHandedOverSession has one orchestrator own every partition and
// take two messages of a session: the first it acknowledges under the
// session's fence, and the stream lets it go. Then a second orchestrator
// joins and takes the session's partition over: the old owner's
// acknowledgement of the second message is refused with a FencedError, and
// the message stays in the stream for the new owner.
func TestAckOfAHandedOverSession(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	join := func(id string) *partition.Table {
		tb, err := partition.New(ctx, js, subjects, id, partition.Config{
			TTL: time.Second, Acquire: func(context.Context, int) error { return nil }, Release: func(int) {}, Lost: func(error) {},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := tb.Join(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tb.Leave() })
		return tb
	}
	p := slices.Index(partition.Assign([]string{"new", "old"}, bus.Partitions), "new")
	session := ""
	for i := 0; session == ""; i++ {
		if s := fmt.Sprintf("s%d", i); bus.Partition("default", s) == p {
			session = s
		}
	}

	got := make(chan *input.Inbound, 2)
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(in *input.Inbound) error {
		got <- in
		return nil
	}), events.NewPublisher(nc, subjects, nil), nil)
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	di, err := d.Input(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	defer di.Stop()
	old := join("old")
	di.Fenced(old)
	f, ok := old.Fence(p)
	if !ok {
		t.Fatalf("the only member does not own partition %d", p)
	}
	if err := di.Serve(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} {
		if _, err := js.Publish(ctx, "agent.in.default."+session, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	stream, _ := js.Stream(ctx, "AGENT_INPUT")
	stored := func() uint64 {
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	take := func() *input.Inbound {
		select {
		case m := <-got:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no input delivered")
			return nil
		}
	}

	first, second := take(), take()
	if err := first.Ack(f); err != nil {
		t.Fatalf("ack of the owner: %v", err)
	}
	bustest.Eventually(t, "the acknowledged message to leave the stream", func() bool { return stored() == 1 })

	taker := join("new")
	bustest.Eventually(t, "the new member to own the session's partition", func() bool { _, ok := taker.Fence(p); return ok })
	bustest.Eventually(t, "the old member to see the claim", func() bool {
		var fe *ownership.FencedError
		return errors.As(old.Check(f), &fe) && fe.Owner == "new"
	})
	err = second.Ack(f)
	var fe *ownership.FencedError
	if !errors.As(err, &fe) || fe.Fence != f || fe.Owner != "new" {
		t.Fatalf("ack of the old owner after the handover: %v, want a FencedError naming the new owner", err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := stored(); n != 1 {
		t.Errorf("%d messages in the stream after the refused ack, want 1", n)
	}
}
