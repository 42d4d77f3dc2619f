package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// leaderKey is the one key of the leadership bucket.
const leaderKey = "leader"

// Leadership makes one orchestrator of a prefix the active one: it holds the
// key "leader" of the KV bucket <PREFIX>_LEADER, whose entries expire after
// a TTL, and renews it; the others wait. A leader that dies stops renewing,
// and another takes over once the key expires; a leader that shuts down
// deletes the key, and another takes over at once.
type Leadership struct {
	kv    jetstream.KeyValue
	id    string
	ttl   time.Duration
	log   *slog.Logger
	rev   uint64
	lost  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	owner bool
}

// NewLeadership binds (or creates) the leadership bucket for the candidate
// id. ttl bounds how long a dead leader holds the fleet; default 10s.
func (d *Durable) NewLeadership(ctx context.Context, subjects Subjects, id string, ttl time.Duration, log *slog.Logger) (*Leadership, error) {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	kv, err := d.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: subjects.StreamName("LEADER"), Description: "agentfleet: which orchestrator is active",
		TTL: ttl, History: 1, Replicas: d.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("leadership bucket: %w", err)
	}
	return &Leadership{kv: kv, id: id, ttl: ttl, log: log, lost: make(chan struct{})}, nil
}

// TryAcquire takes the lead if no one holds it (or this candidate does),
// and reports whether it now holds it; holder names the current leader.
func (l *Leadership) TryAcquire(ctx context.Context) (ok bool, holder string, err error) {
	rev, err := l.kv.Create(ctx, leaderKey, []byte(l.id))
	if err == nil {
		l.acquired(rev)
		return true, l.id, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, "", fmt.Errorf("leadership: %w", err)
	}
	e, err := l.kv.Get(ctx, leaderKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, "", nil // it expired just now: try again
	}
	if err != nil {
		return false, "", fmt.Errorf("leadership: %w", err)
	}
	if string(e.Value()) != l.id {
		return false, string(e.Value()), nil
	}
	rev, err = l.kv.Update(ctx, leaderKey, []byte(l.id), e.Revision())
	if err != nil {
		return false, "", nil
	}
	l.acquired(rev)
	return true, l.id, nil
}

// Acquire waits until this candidate leads, trying every TTL/4.
func (l *Leadership) Acquire(ctx context.Context) error {
	for {
		ok, holder, err := l.TryAcquire(ctx)
		if err != nil {
			l.log.Warn("leadership", "err", err)
		}
		if ok {
			return nil
		}
		l.log.Debug("standing by", "leader", holder)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.ttl / 4):
		}
	}
}

func (l *Leadership) acquired(rev uint64) {
	l.rev, l.owner = rev, true
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.renew()
}

// renew rewrites the key every TTL/3; a renewal that fails means another
// candidate took over (or the store is gone), and Lost is closed.
func (l *Leadership) renew() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		rev, err := l.kv.Update(ctx, leaderKey, []byte(l.id), l.rev)
		cancel()
		if err != nil {
			l.log.Error("lost the lead", "err", err)
			close(l.lost)
			return
		}
		l.rev = rev
	}
}

// Lost is closed when this candidate stops leading without Release.
func (l *Leadership) Lost() <-chan struct{} { return l.lost }

// Release stops renewing and deletes the key, so that another candidate
// takes over at once.
func (l *Leadership) Release(ctx context.Context) error {
	if !l.owner {
		return nil
	}
	l.owner = false
	close(l.stop)
	<-l.done
	if err := l.kv.Delete(ctx, leaderKey, jetstream.LastRevision(l.rev)); err != nil {
		return fmt.Errorf("leadership: release: %w", err)
	}
	return nil
}
