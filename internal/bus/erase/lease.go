package erase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LeaseBucket is the KV bucket of the deletes in progress: a key per
// session being deleted (<agent>.<session>), held by one delete at a time.
const LeaseBucket = "agentfleet_deletes"

// ErrLeaseLost is wrapped by the error of a delete that was held up past
// its lease (paused, cut off) while another delete of the session took
// it: it purges nothing more.
var ErrLeaseLost = errors.New("another delete of the session took over")

// leaseValue is what a lease key holds: who holds it, and until when by
// the holder's clock.
type leaseValue struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// lease is one delete's hold of its session. Two deletes of one session
// (a client's retry after its timeout, taken by another orchestrator) do
// not overlap: the later is refused while the earlier holds the key, and
// takes it over by revision once the earlier's time is up; the earlier,
// checking before each purge, then finds the key taken and purges nothing
// more. So a delete's answer means no other delete of the session removes
// anything afterwards, save one that passed its check just before a pause.
type lease struct {
	kv    jetstream.KeyValue
	key   string
	rev   uint64
	until time.Time
}

// ErrInProgress is wrapped by the refusal of a delete while another delete
// of the session holds its lease: the client tries again once that one
// answered. It is not queued, so that a request whose client gave up
// (timed out) does not run later, after a retry answered and the client
// went on.
var ErrInProgress = errors.New("another delete of the session is in progress")

// acquire takes the session's lease for hold, or refuses at once
// (ErrInProgress) while another delete holds it and its time is not up.
func acquire(ctx context.Context, js jetstream.JetStream, replicas int, agent, session, holder string, hold time.Duration) (*lease, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: LeaseBucket, Description: "agentfleet: the deletes of sessions in progress",
		TTL: time.Hour, Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", LeaseBucket, err)
	}
	l := &lease{kv: kv, key: agent + "." + session, until: time.Now().Add(hold)}
	v, _ := json.Marshal(leaseValue{Holder: holder, Until: l.until})
	if l.rev, err = kv.Create(ctx, l.key, v); err == nil {
		return l, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("bucket %s: %w", LeaseBucket, err)
	}
	e, err := kv.Get(ctx, l.key)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", LeaseBucket, err)
	}
	var cur leaseValue
	if json.Unmarshal(e.Value(), &cur) == nil && !time.Now().After(cur.Until) {
		return nil, fmt.Errorf("session %s: %w (orchestrator %s, until %s): try again once it answered",
			session, ErrInProgress, cur.Holder, cur.Until.UTC().Format(time.RFC3339))
	}
	// Its holder ran out of time: take it over, unless another did first.
	if l.rev, err = kv.Update(ctx, l.key, v, e.Revision()); err != nil {
		return nil, fmt.Errorf("session %s: %w: %v", session, ErrInProgress, err)
	}
	return l, nil
}

// check returns ErrLeaseLost (wrapped) once the lease is no longer this
// delete's: its time is up, or another delete holds the key.
func (l *lease) check(ctx context.Context) error {
	if time.Now().After(l.until) {
		return fmt.Errorf("%w: the delete outlived its lease", ErrLeaseLost)
	}
	e, err := l.kv.Get(ctx, l.key)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", LeaseBucket, err)
	}
	if e.Revision() != l.rev {
		return fmt.Errorf("%w (revision %d, this delete's %d)", ErrLeaseLost, e.Revision(), l.rev)
	}
	return nil
}

// release ends the lease, unless another delete took it.
func (l *lease) release(ctx context.Context) {
	l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
}
