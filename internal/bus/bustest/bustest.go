// Package bustest starts real NATS servers and clients for tests.
package bustest

import (
	"net"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// testSync is the test servers' sync policy: nats-server's lazy default,
// not the fleet's fsync per write. A test server stores in a temporary
// directory and is stopped or killed with its process, which keeps the page
// cache, so an fsync per write buys a test nothing and costs it time (a
// package of JetStream tests ran 35% longer with it). The setting itself is
// tested by internal/bus/server TestEmbeddedSync, cmd/orchestrator
// TestSyncFlag and the power-loss test, internal/chaos/lazyfs TestPowerLoss.
var testSync = busserver.Sync{Interval: 2 * time.Minute}

// MustRunNATS starts an embedded NATS server with JetStream on a random
// loopback port, stopped when the test ends. It syncs lazily (testSync).
func MustRunNATS(tb testing.TB) *server.Server {
	tb.Helper()
	s, err := busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: "127.0.0.1:-1", DataDir: tb.TempDir(), Sync: testSync})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// MustConnect connects to s, closed when the test ends.
func MustConnect(tb testing.TB, s *server.Server) *nats.Conn {
	tb.Helper()
	nc, err := bus.Connect(bus.ConnectConfig{URL: s.ClientURL(), Name: tb.Name()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// Eventually waits until cond holds, checking it every few milliseconds, and
// fails the test if it does not within 10 seconds. Use it for state that has
// no event to wait on.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// FreeAddr returns a loopback address with a port free at the time of the
// call, for a server that must come back on the same address.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// MustRunNATSAt starts an embedded NATS server with JetStream at addr,
// storing in dir, so that a test can stop it and start it again on the
// same address and store; it is stopped when the test ends. It syncs
// lazily (testSync).
func MustRunNATSAt(tb testing.TB, addr, dir string) *server.Server {
	tb.Helper()
	s, err := busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: addr, DataDir: dir, Sync: testSync})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}
