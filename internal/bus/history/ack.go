package history

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/puback"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publish stores msg in the stream and waits for its acknowledgement until
// timeout or the end of ctx, whose cause it returns. Its errors are those
// jetstream's PublishMsg gives: an *jetstream.APIError for the stream's
// refusal, jetstream.ErrNoStreamResponse when no stream takes the subject.
func (r *replies) publish(ctx context.Context, msg *nats.Msg, timeout time.Duration) (*jetstream.PubAck, error) {
	m, err := r.request(ctx, msg, timeout)
	if err != nil {
		return nil, err
	}
	return puback.Parse(m, r.stream)
}
