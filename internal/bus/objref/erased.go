package objref

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErasedBucket is the KV bucket of the runs whose session was deleted
// while they ran, one key per run (<agent>.<session>.<run id>): an object
// such a run puts after the delete swept the session's objects is deleted
// by its worker at once (the deletion's fence on the object store).
const ErasedBucket = "agentfleet_erased"

// ErasedTTL is how long a deleted run is remembered: longer than a call
// may run (a worker's replies are allowed 15 minutes).
const ErasedTTL = time.Hour

// ErrErased is wrapped by the error of an object put by a run whose
// session was deleted: the object is deleted again.
var ErrErased = errors.New("the session was deleted")

// erasedKV opens the erased bucket once it exists.
type erasedKV struct {
	mu sync.Mutex
	kv jetstream.KeyValue
}

func erasedKey(agent, session, run string) string { return agent + "." + session + "." + run }

// MarkErased records that runs of a session were stopped for its delete,
// before the delete sweeps the session's objects (DeleteSession): whatever
// object those runs put from then on is deleted by the worker that put it.
func (s *Store) MarkErased(ctx context.Context, agent, session string, runs []string) error {
	if len(runs) == 0 {
		return nil
	}
	kv, err := s.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: ErasedBucket, Description: "agentfleet: runs whose session was deleted while they ran",
		TTL: ErasedTTL, Storage: jetstream.FileStorage, Replicas: s.replicas,
	})
	if err != nil {
		return fmt.Errorf("bucket %s: %w", ErasedBucket, err)
	}
	for _, run := range runs {
		if _, err := kv.Put(ctx, erasedKey(agent, session, run), nil); err != nil {
			return fmt.Errorf("bucket %s: run %s: %w", ErasedBucket, run, err)
		}
	}
	return nil
}

// erased reports whether run of session was stopped for a delete of the
// session (MarkErased). No bucket: none was.
func (s *Store) erased(ctx context.Context, agent, session, run string) (bool, error) {
	s.erasedKV.mu.Lock()
	kv := s.erasedKV.kv
	s.erasedKV.mu.Unlock()
	if kv == nil {
		var err error
		kv, err = s.js.KeyValue(ctx, ErasedBucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("bucket %s: %w", ErasedBucket, err)
		}
		s.erasedKV.mu.Lock()
		s.erasedKV.kv = kv
		s.erasedKV.mu.Unlock()
	}
	_, err := kv.Get(ctx, erasedKey(agent, session, run))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("bucket %s: %w", ErasedBucket, err)
	}
	return true, nil
}
