package bus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
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

// lockedBuffer is a bytes.Buffer safe for the writes of a logger and the
// reads of a test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestConnectHidesSecrets connects with URLs that carry a password or a
// token to a server that is not there, or to a URL that does not parse:
// neither the error nor the log lines hold the secret, and they still say
// where the connection was going.
func TestConnectHidesSecrets(t *testing.T) {
	addr := bustest.FreeAddr(t)
	const secret = "Sup3rS3cret"
	tests := []struct {
		name, url, want string
		retry           time.Duration
	}{
		{"password, no server", "nats://alice:" + secret + "@" + addr, "nats://alice:xxxxx@" + addr, 0},
		{"password, retried", "nats://alice:" + secret + "@" + addr, "nats://alice:xxxxx@" + addr, 300 * time.Millisecond},
		{"token, no server", "nats://" + secret + "@" + addr, "nats://xxxxx@" + addr, 0},
		{"list of servers", "nats://alice:" + secret + "@" + addr + ",nats://bob:" + secret + "x@" + addr, "nats://bob:xxxxx@" + addr, 0},
		{"bad port", "nats://alice:" + secret + "@127.0.0.1:port", "nats://xxxxx@127.0.0.1:port", 0},
		{"bad escape", "nats://alice:" + secret + "%zz@" + addr, "nats://xxxxx@" + addr, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			_, err := bus.Connect(bus.ConnectConfig{URL: tt.url, RetryFor: tt.retry, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err == nil {
				t.Fatal("connected to nothing")
			}
			if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to name %s and not the secret", err, tt.want)
			}
			if tt.retry > 0 && !strings.Contains(logs.String(), "retrying") {
				t.Errorf("no retry logged: %s", logs)
			}
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the logs hold the secret:\n%s", logs)
			}
		})
	}
}

// TestConnectRefusesBadInboxPrefix: a prefix that would receive nothing or
// every inbox is refused before any connection, saying what is wrong.
func TestConnectRefusesBadInboxPrefix(t *testing.T) {
	s := bustest.MustRunNATS(t)
	for _, p := range []string{"_INBOX.>", "_INBOX.*", "$KV.agent_tools", "agent.out.x", "_INBOX.a."} {
		_, err := bus.Connect(bus.ConnectConfig{URL: s.ClientURL(), InboxPrefix: p})
		if err == nil || !strings.Contains(err.Error(), "inbox prefix "+strconv.Quote(p)) {
			t.Errorf("prefix %q: err = %v", p, err)
		}
	}
	nc, err := bus.Connect(bus.ConnectConfig{URL: s.ClientURL(), InboxPrefix: "_INBOX.alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.NewRespInbox(); !strings.HasPrefix(got, "_INBOX.alice.") {
		t.Errorf("inbox %q, want it under _INBOX.alice.", got)
	}
}
