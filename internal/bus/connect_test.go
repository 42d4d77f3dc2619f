package bus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/nats-io/nats.go"
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

// signalHandler is a slog handler that reports each record's message.
type signalHandler struct{ msgs chan string }

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.msgs <- r.Message:
	default:
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// TestConnectRetriesFirstConnection: with RetryFor, Connect waits for a
// server that starts after it was called, as a service started beside its
// NATS does; without, it fails at once, and with a RetryFor that runs out
// it says so.
func TestConnectRetriesFirstConnection(t *testing.T) {
	addr := bustest.FreeAddr(t)
	url := "nats://" + addr
	if _, err := bus.Connect(bus.ConnectConfig{URL: url}); !errors.Is(err, nats.ErrNoServers) {
		t.Fatalf("without RetryFor: err = %v, want no servers", err)
	}
	start := time.Now()
	_, err := bus.Connect(bus.ConnectConfig{URL: url, RetryFor: 300 * time.Millisecond, Logger: slog.New(signalHandler{make(chan string, 8)})})
	if !errors.Is(err, nats.ErrNoServers) || !strings.Contains(err.Error(), "no server answered for 300ms") {
		t.Fatalf("RetryFor run out: err = %v", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %s, before RetryFor", d)
	}

	msgs := make(chan string, 64)
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := bus.Connect(bus.ConnectConfig{URL: url, RetryFor: time.Minute, Logger: slog.New(signalHandler{msgs})})
		done <- result{nc, err}
	}()
	// The first attempt has failed once it logs its retry.
	if m := <-msgs; !strings.Contains(m, "retrying") {
		t.Fatalf("log %q, want the retry", m)
	}
	bustest.MustRunNATSAt(t, addr, t.TempDir())
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.nc.Close()
		if !r.nc.IsConnected() {
			t.Error("Connect returned a connection that is not connected")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Connect did not return once the server ran")
	}
}
