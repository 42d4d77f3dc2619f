package input_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
)

// TestPoisonInputIsDropped hands a message to a handler that fails on it
// every time with an error that could pass: after MaxDeliver failures it is
// dropped with an error event naming it, and not delivered again.
func TestPoisonInputIsDropped(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	errs, err := nc.SubscribeSync("agent.events.default.poison.error")
	if err != nil {
		t.Fatal(err)
	}
	var deliveries atomic.Int32
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(in *input.Inbound) error {
		deliveries.Add(1)
		return bus.Temporary(errors.New("the store did not answer"))
	}), events.NewPublisher(nc, subjects, nil), nil)
	ctx := context.Background()
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{MaxDeliver: 3})
	if err != nil {
		t.Fatal(err)
	}
	di, err := d.Input(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := di.Serve(ctx, bus.Partition("default", "poison")); err != nil {
		t.Fatal(err)
	}
	defer di.Stop()
	if err := nc.Publish("agent.in.default.poison", []byte("crash me")); err != nil {
		t.Fatal(err)
	}
	m, err := errs.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no error event after %d deliveries: %v", deliveries.Load(), err)
	}
	var e agentfleet.Event
	json.Unmarshal(m.Data, &e)
	if !strings.Contains(e.ErrorMessage, "failed 3 times and is dropped; last error: the store did not answer") || e.Subject != "agent.in.default.poison" || e.Payload != "crash me" {
		t.Errorf("error event = %+v", e)
	}
	if got := deliveries.Load(); got != 3 {
		t.Errorf("handled %d times, want 3", got)
	}
	if _, err := errs.NextMsg(300 * time.Millisecond); err == nil {
		t.Error("a second error event: the message came back")
	}
}

// TestHandoversAreNotFailures hands a message back again and again, as
// orchestrators that shut down mid-run do: it is delivered each time, and
// never dropped as poison.
func TestHandoversAreNotFailures(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	errs, err := nc.SubscribeSync("agent.events.default.handover.error")
	if err != nil {
		t.Fatal(err)
	}
	const handovers = 8
	var deliveries atomic.Int32
	acked := make(chan uint64, 1)
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(in *input.Inbound) error {
		if deliveries.Add(1) <= handovers {
			in.Nak() // cut short by a shutdown: deliver it again at once
			return nil
		}
		if err := in.Ack(ownership.Fence{Partition: bus.Partition(in.Agent, in.Session)}); err != nil {
			t.Error(err)
		}
		acked <- in.Delivery
		return nil
	}), events.NewPublisher(nc, subjects, nil), nil)
	ctx := context.Background()
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{MaxDeliver: 3})
	if err != nil {
		t.Fatal(err)
	}
	di, err := d.Input(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	di.Fenced(ownership.Unfenced) // no other owner here
	if err := di.Serve(ctx, bus.Partition("default", "handover")); err != nil {
		t.Fatal(err)
	}
	defer di.Stop()
	if err := nc.Publish("agent.in.default.handover", []byte("keep me")); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-acked:
		if n != handovers+1 {
			t.Errorf("acknowledged at delivery %d, want %d", n, handovers+1)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("not acknowledged after %d deliveries", deliveries.Load())
	}
	if m, err := errs.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("an error event: %s", m.Data)
	}
}
