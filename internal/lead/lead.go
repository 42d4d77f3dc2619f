// Package lead elects the active orchestrator of a prefix. The active one
// holds the key "leader" of the KV bucket <PREFIX>_LEADER, whose entries
// expire after a TTL, and renews it; the others stand by and try again. A
// Term is one tenure: it knows, from its own monotonic clock, until when the
// lead is certainly still its own, and says so before every write, so that a
// leader paused or cut off past its TTL stops writing before anyone else can
// have taken over (the history's conditional appends are the second fence).
package lead

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// key is the one key of the leadership bucket.
const key = "leader"

// DefaultTTL bounds how long a dead leader holds the lead.
const DefaultTTL = 10 * time.Second

// ErrLost is the error of a term that ended without Release.
var ErrLost = errors.New("lead: this orchestrator lost the lead")

// Election is one candidate's side of the election.
type Election struct {
	kv  jetstream.KeyValue
	id  string
	ttl time.Duration
	log *slog.Logger
}

// Config configures an Election; the zero value means the documented
// defaults.
type Config struct {
	// TTL bounds how long a dead leader holds the lead; default DefaultTTL.
	TTL time.Duration
	// Replicas of the bucket; default 1.
	Replicas int
	Logger   *slog.Logger
}

// New binds (or creates) the leadership bucket of subjects' prefix for the
// candidate id.
func New(ctx context.Context, js jetstream.JetStream, subjects bus.Subjects, id string, cfg Config) (*Election, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: subjects.StreamName("LEADER"), Description: "agentfleet: which orchestrator is active",
		TTL: cfg.TTL, History: 1, Replicas: max(cfg.Replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("leadership bucket: %w", err)
	}
	return &Election{kv: kv, id: id, ttl: cfg.TTL, log: cfg.Logger}, nil
}

// ID returns the candidate's id.
func (e *Election) ID() string { return e.id }

// TTL returns the lead's time to live.
func (e *Election) TTL() time.Duration { return e.ttl }

// TryAcquire takes the lead if no one holds it (or this candidate does), and
// returns the new term; a nil term with a nil error means another candidate
// leads, and holder names it.
func (e *Election) TryAcquire(ctx context.Context) (t *Term, holder string, err error) {
	sent := time.Now()
	rev, err := e.kv.Create(ctx, key, []byte(e.id))
	if err == nil {
		return e.start(rev, sent), e.id, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, "", fmt.Errorf("lead: %w", err)
	}
	entry, err := e.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, "", nil // it expired just now: try again
	}
	if err != nil {
		return nil, "", fmt.Errorf("lead: %w", err)
	}
	if string(entry.Value()) != e.id {
		return nil, string(entry.Value()), nil
	}
	// This candidate's own key from an earlier term: a new term begins.
	sent = time.Now()
	rev, err = e.kv.Update(ctx, key, []byte(e.id), entry.Revision())
	if err != nil {
		return nil, "", nil
	}
	return e.start(rev, sent), e.id, nil
}

// Acquire waits until this candidate leads, trying every TTL/4, and returns
// the term. Errors (NATS away) are logged and tried again; only ctx ends the
// wait.
func (e *Election) Acquire(ctx context.Context) (*Term, error) {
	for {
		t, holder, err := e.TryAcquire(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("leadership", "err", err)
		}
		if t != nil {
			return t, nil
		}
		e.log.Debug("standing by", "leader", holder)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(e.ttl / 4):
		}
	}
}

// Term is one tenure of the lead. It renews the key every TTL/3 and ends
// (Lost is closed) when a renewal finds the key taken, or when the lead can
// no longer be known to be its own: TTL minus a margin after the last
// renewal that the server acknowledged, measured from when it was sent.
type Term struct {
	e   *Election
	rev uint64

	mu      sync.Mutex
	renewed time.Time // when the last acknowledged write of the key was sent
	lost    chan struct{}
	ended   bool
	stop    chan struct{}
	done    chan struct{}
}

func (e *Election) start(rev uint64, sent time.Time) *Term {
	t := &Term{e: e, rev: rev, renewed: sent, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go t.renew()
	return t
}

// lease is how long after a renewal was sent the lead is certainly still
// this term's: a standby can take it only once the key expired, TTL after
// the server stored the renewal.
func (t *Term) lease() time.Duration { return t.e.ttl - t.e.ttl/5 }

// Valid returns nil while the lead is certainly this term's, and an error
// wrapping ErrLost once it may not be. Writers ask it before every write.
func (t *Term) Valid() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return ErrLost
	}
	if since := time.Since(t.renewed); since > t.lease() {
		t.loseLocked(fmt.Errorf("%w: no renewal acknowledged for %v (lease %v)", ErrLost, since.Round(time.Millisecond), t.lease()))
		return ErrLost
	}
	return nil
}

// Lost is closed when the term ends without Release.
func (t *Term) Lost() <-chan struct{} { return t.lost }

func (t *Term) loseLocked(why error) {
	if t.ended {
		return
	}
	t.ended = true
	t.e.log.Error("lost the lead", "err", why)
	close(t.lost)
}

func (t *Term) renew() {
	defer close(t.done)
	every := t.e.ttl / 3
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-t.lost:
			return
		case <-timer.C:
		}
		if t.Valid() != nil {
			return
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), every)
		rev, err := t.e.kv.Update(ctx, key, []byte(t.e.id), t.rev)
		cancel()
		t.mu.Lock()
		switch {
		case err == nil:
			t.rev, t.renewed = rev, sent
			timer.Reset(every)
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyNotFound):
			t.loseLocked(fmt.Errorf("%w: %v", ErrLost, err))
		default:
			// The server may be away for a moment: try again soon, until
			// the lease runs out.
			t.e.log.Warn("renewing the lead", "err", err)
			timer.Reset(t.e.ttl / 10)
		}
		t.mu.Unlock()
	}
}

// Release ends the term and deletes the key, so that a standby takes over at
// once. It is a no-op on a term already lost.
func (t *Term) Release(ctx context.Context) error {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		<-t.done
		return nil
	}
	t.ended = true
	close(t.stop)
	t.mu.Unlock()
	<-t.done
	t.mu.Lock()
	rev := t.rev
	t.mu.Unlock()
	if err := t.e.kv.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil {
		return fmt.Errorf("lead: release: %w", err)
	}
	return nil
}
