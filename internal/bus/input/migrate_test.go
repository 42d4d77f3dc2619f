package input_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestMigrateEarlierInputStream makes an input stream as the releases
// before partitions did (unpartitioned subjects, one consumer), with input
// waiting in it, and opens the durable input on it: the old consumer is
// gone, and every message is stored again under its partition, in order,
// with the id it had (its Nats-Msg-Id, or js-<sequence>).
func TestMigrateEarlierInputStream(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "AGENT_INPUT", Subjects: []string{"agent.in.>", "agent.steer.>"}, Retention: jetstream.WorkQueuePolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "orchestrator", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg("agent.in.default.old")
	m.Data = []byte("first")
	m.Header.Set(nats.MsgIdHdr, "client-id-1")
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	second, err := js.Publish(ctx, "agent.steer.default.old", []byte("second"))
	if err != nil {
		t.Fatal(err)
	}

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
	if _, err := st.Consumer(ctx, "orchestrator"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the consumer of the earlier release: %v, want it gone", err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	defer pcancel()
	pending, err := di.Pending(pctx, "default", "old")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ kind, text, id string }{
		{bus.KindIn, "first", "client-id-1"},
		{bus.KindSteer, "second", fmt.Sprintf("js-%d", second.Sequence)},
	}
	if len(pending) != len(want) {
		t.Fatalf("%d messages under the partition, want %d", len(pending), len(want))
	}
	for i, w := range want {
		p := pending[i]
		if p.Kind != w.kind || p.Message.ID != w.id || len(p.Message.Content) != 1 || p.Message.Content[0].Text != w.text {
			t.Errorf("message %d: kind %q, id %q, content %+v; want %s %q %q", i, p.Kind, p.Message.ID, p.Message.Content, w.kind, w.id, w.text)
		}
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("agent.*.*.*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 0 {
		t.Errorf("messages left under unpartitioned subjects: %v", info.State.Subjects)
	}
	// Opening it again moves nothing twice.
	if _, err := d.Input(ctx, in); err != nil {
		t.Fatal(err)
	}
	if again, _ := di.Pending(ctx, "default", "old"); len(again) != len(want) {
		t.Errorf("%d messages after a second open, want %d", len(again), len(want))
	}
}
