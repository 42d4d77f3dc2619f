package toolrpc_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/nats-io/nats.go"
)

// BenchmarkToolClientOnly measures the client's side of one call: the
// worker is a bare subscription that answers every request with the same
// encoded result frame, so that what it allocates (one delivered message)
// is nearly constant, and the rest is the client's and the NATS server's.
func BenchmarkToolClientOnly(b *testing.B) {
	srv := bustest.MustRunNATS(b)
	text := strings.Repeat("x", 200)
	frame, err := wire.EncodeFrame(&wire.Frame{T: wire.FrameResult, ID: "c", Worker: "bench/1", Result: agentfleet.TextResult(text)})
	if err != nil {
		b.Fatal(err)
	}
	wc := bustest.MustConnect(b, srv)
	sub, err := wc.Subscribe("agent.tool.echo", func(m *nats.Msg) { _ = wc.Publish(m.Reply, frame) })
	if err != nil {
		b.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	c, err := toolrpc.NewToolClient(bustest.MustConnect(b, srv), toolrpc.ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	benchEchoCalls(b, c, text)
}
