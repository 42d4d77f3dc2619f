package input

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestJetStreamAbsent(t *testing.T) {
	tests := []struct {
		name      string
		serverHas bool
		err       error
		want      bool
	}{
		{"the account has none, whatever the server", true, jetstream.ErrJetStreamNotEnabledForAccount, true},
		{"the account has none, wrapped", false, fmt.Errorf("nats: %w", jetstream.ErrJetStreamNotEnabledForAccount), true},
		{"a server without JetStream: nobody serves the API", false, jetstream.ErrJetStreamNotEnabled, true},
		{"a server without JetStream: no responders", false, nats.ErrNoResponders, true},
		{"a server with JetStream that says it has none: starting", true, jetstream.ErrJetStreamNotEnabled, false},
		{"a server with JetStream and no responders: starting", true, nats.ErrNoResponders, false},
		{"a server with JetStream that did not answer in time", true, context.DeadlineExceeded, false},
		{"no answer in time, not connected (no INFO)", false, context.DeadlineExceeded, false},
		{"a 503 of a cluster without a leader", true, &jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, false},
		{"the connection closed", false, nats.ErrConnectionClosed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jetStreamAbsent(tt.serverHas, tt.err); got != tt.want {
				t.Errorf("jetStreamAbsent(%v, %v) = %v, want %v", tt.serverHas, tt.err, got, tt.want)
			}
		})
	}
}

// TestOpenDurableWaitsForJetStream: against a server without JetStream,
// OpenDurable says so at once; against one that is not up yet when the
// orchestrator connects (a NATS restart), it waits for it and opens the
// durable input instead of taking it for one without JetStream.
func TestOpenDurableWaitsForJetStream(t *testing.T) {
	subjects, _ := bus.NewSubjects("")
	plain, err := busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: "127.0.0.1:0", NoJetStream: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Shutdown)
	nc := bustest.MustConnect(t, plain)
	start := time.Now()
	if _, err := OpenDurable(context.Background(), nc, subjects, DurableConfig{}); !errors.Is(err, ErrNoJetStream) {
		t.Errorf("no JetStream: err = %v, want ErrNoJetStream", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("no JetStream was told after %v; want at once", d)
	}

	addr := bustest.FreeAddr(t)
	late, err := nats.Connect("nats://"+addr, nats.RetryOnFailedConnect(true), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(late.Close)
	opened := make(chan error, 1)
	go func() {
		_, err := OpenDurable(context.Background(), late, subjects, DurableConfig{})
		opened <- err
	}()
	// The server comes up after a request to the JetStream API has gone
	// unanswered for longer than jetstream's timeout (5 s), which a
	// single account info request took for a server without JetStream.
	// The wait is the behaviour under test: there is no event to wait on.
	select {
	case err := <-opened:
		t.Fatalf("OpenDurable returned before the server was up: %v", err)
	case <-time.After(6 * time.Second):
	}
	bustest.MustRunNATSAt(t, addr, t.TempDir())
	select {
	case err := <-opened:
		if err != nil {
			t.Errorf("a server that came up late: %v, want the durable input opened", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("OpenDurable did not return")
	}
}
