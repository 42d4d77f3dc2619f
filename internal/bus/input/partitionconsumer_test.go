package input_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPartitionConsumersAfterRestart serves a partition, whose consumer keeps
// its state in memory, takes one message, and restarts the lone server,
// which forgets the consumer: the consumer is created again on the
// reconnection, the message left unacknowledged across the restart is
// delivered again, and input sent after the restart is delivered.
func TestPartitionConsumersAfterRestart(t *testing.T) {
	ctx := context.Background()
	addr, dir := bustest.FreeAddr(t), t.TempDir()
	srv := bustest.MustRunNATSAt(t, addr, dir)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *input.Inbound, 16)
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(in *input.Inbound) error {
		got <- in
		return nil
	}), nil, nil)
	di, err := d.Input(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	defer di.Stop()
	di.Fenced(ownership.Unfenced)
	p := bus.Partition("default", "cr")
	if err := di.Serve(ctx, p); err != nil {
		t.Fatal(err)
	}
	js := d.JetStream()
	cons, err := js.Consumer(ctx, "AGENT_INPUT", "partition-"+strconv.Itoa(p))
	if err != nil {
		t.Fatal(err)
	}
	if !cons.CachedInfo().Config.MemoryStorage {
		t.Errorf("partition consumer: memory storage off, want on")
	}
	next := func(what string) *input.Inbound {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(15 * time.Second):
			t.Fatalf("no delivery of %s within 15s", what)
			return nil
		}
	}
	if _, err := js.Publish(ctx, "agent.in.default.cr", []byte("before")); err != nil {
		t.Fatal(err)
	}
	if m := next("the message before the restart"); m.Message.Content[0].Text != "before" {
		t.Fatalf("delivered %q, want before", m.Message.Content[0].Text)
	}

	srv.Shutdown()
	srv.WaitForShutdown()
	bustest.MustRunNATSAt(t, addr, dir)

	again := next("the unacknowledged message after the restart")
	if text := again.Message.Content[0].Text; text != "before" {
		t.Fatalf("delivered again %q, want before", text)
	}
	if err := again.Ack(ownership.Fence{Partition: p}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "agent.in.default.cr", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if m := next("the message after the restart"); m.Message.Content[0].Text != "after" {
		t.Fatalf("delivered %q, want after", m.Message.Content[0].Text)
	}
}

// TestFilePartitionConsumerIsKept serves a partition whose consumer an
// earlier release made in files, with another description: it is updated
// and keeps its files (JetStream does not change a consumer's storage).
func TestFilePartitionConsumerIsKept(t *testing.T) {
	ctx := context.Background()
	nc := bustest.MustConnect(t, bustest.MustRunNATS(t))
	subjects, _ := bus.NewSubjects("")
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(*input.Inbound) error { return nil }), nil, nil)
	di, err := d.Input(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	defer di.Stop()
	js := d.JetStream()
	st, err := js.Stream(ctx, "AGENT_INPUT")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "partition-7", Description: "an earlier release", FilterSubject: "agent.*.7.*.*",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: -1, MaxAckPending: 10_000,
		PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"owner"}, PinnedTTL: 5 * time.Second,
	}); err != nil {
		t.Fatal(err)
	}
	if err := di.Serve(ctx, 7); err != nil {
		t.Fatalf("Serve on a file consumer: %v", err)
	}
	cons, err := st.Consumer(ctx, "partition-7")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := cons.CachedInfo().Config; cfg.MemoryStorage || cfg.Description != "agentfleet: the input of partition 7" {
		t.Errorf("consumer after Serve: memory storage %v, description %q; want files kept, the description updated", cfg.MemoryStorage, cfg.Description)
	}
}
