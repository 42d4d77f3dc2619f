package input_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// relayRig is a relaying input over a durable input stream on a server of
// its own, serving the partition of session of agent default with handle,
// unfenced (no other owner); check, if not nil, is the input's Check.
type relayRig struct {
	nc *nats.Conn
	js jetstream.JetStream
	in *input.Input
}

func startRelaying(t *testing.T, session string, handle input.InputHandlerFunc, check func(*input.Inbound) error) *relayRig {
	t.Helper()
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	ctx := context.Background()
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	in := input.NewInput(nc, subjects, handle, events.NewPublisher(nc, subjects, nil), nil)
	di, err := d.Input(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	di.Fenced(ownership.Unfenced)
	t.Cleanup(func() { di.Stop() })
	js, _ := jetstream.New(nc)
	in.Relayed(js)
	in.Check = check
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Stop() })
	if err := di.Serve(ctx, bus.Partition("default", session)); err != nil {
		t.Fatal(err)
	}
	return &relayRig{nc: nc, js: js, in: in}
}
