package scriptfleet

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// OpenStore binds the scripted tools' bucket of a fleet that exists.
// Unlike NewStore, it does not create a missing bucket: the orchestrator
// and the workers that serve scripts create it with the replicas of their
// configuration, which a client does not know. Its errors say whether the
// bucket or JetStream is missing.
func OpenStore(ctx context.Context, nc *nats.Conn) (*Store, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("JetStream: %w", err)
	}
	bucket := DefaultBucket
	_, err = js.KeyValue(ctx, bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return nil, fmt.Errorf("no scripted tools are stored on this NATS server: the KV bucket %s does not exist (the orchestrator, with JetStream, and every toolworker --scripts create it when they start)", bucket)
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("JetStream is not enabled on this NATS server (for this user's account), so it stores no scripted tools")
	case err != nil:
		return nil, fmt.Errorf("KV bucket %s: %w", bucket, err)
	}
	return NewStore(ctx, nc, StoreConfig{Bucket: bucket})
}
