package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
)

// TestDrainReturnsOnceFlushedAndClosed publishes a burst and drains at
// once: when Drain returns the connection is closed and the server has
// passed on every message, which nats.Conn.Drain, returning at once, does
// not promise.
func TestDrainReturnsOnceFlushedAndClosed(t *testing.T) {
	const n = 10_000
	srv := bustest.MustRunNATS(t)
	pub, recv := bustest.MustConnect(t, srv), bustest.MustConnect(t, srv)
	sub, err := recv.SubscribeSync("drain.test")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := recv.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := pub.Publish("drain.test", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bus.Drain(ctx, pub); err != nil {
		t.Fatal(err)
	}
	if !pub.IsClosed() {
		t.Error("the connection is not closed")
	}
	// The server passed the burst on before it answered the receiver's
	// round trip, which it handles after the publisher's.
	if err := recv.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := sub.Pending(); got != n {
		t.Errorf("received %d of %d messages", got, n)
	}
}
