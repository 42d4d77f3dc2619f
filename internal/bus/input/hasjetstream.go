package input

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jetStreamAbsent decides, from whether the connected server advertises
// JetStream in its INFO (serverHas) and the JetStream API's answer to an
// account info request (err, not nil), whether this connection has no
// JetStream: the account has none (the server said so), or the server
// advertises none and nobody serves the API. A server that advertises
// JetStream and has not answered, or answers that it has none, is starting
// (a restarted server takes its streams back before it serves them) or
// slow: it is not absent, and is asked again. Taking such a server for one
// without JetStream started an orchestrator of a durable fleet in memory,
// beside durable ones: it ran the sessions it was given without fences, and
// ran tool calls twice.
func jetStreamAbsent(serverHas bool, err error) bool {
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return true
	case serverHas:
		return false
	}
	return errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrNoResponders)
}

// probeJetStream asks js's server for the account's JetStream until it
// answers (bus.RetryJS): nil when it has JetStream, ErrNoJetStream
// (wrapped) when it has none (jetStreamAbsent), the last error when it did
// not answer within the retries.
func probeJetStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) error {
	return bus.RetryJS(ctx, func(ctx context.Context) error {
		_, err := js.AccountInfo(ctx)
		if err == nil {
			return nil
		}
		if has, _ := nc.ConnectedServerJetStream(); jetStreamAbsent(has, err) {
			// Not wrapped: RetryJS would take it for one that passes.
			return fmt.Errorf("%w: %v", ErrNoJetStream, err)
		}
		return err
	})
}
