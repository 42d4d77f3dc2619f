// Package partition shares the sessions of a fleet among all its
// orchestrators. Sessions map to a fixed number of partitions (bus.Partition,
// the NATS server's own partition hash); each partition is owned by one
// orchestrator at a time, and every orchestrator owns a share.
//
// Two JetStream key-value buckets hold the table:
//
//   - <PREFIX>_MEMBERS: one key per orchestrator, rewritten every TTL/3 and
//     expiring TTL after its last write. It is the member's lease: it owns
//     partitions only while the key is certainly its own, as measured on its
//     own monotonic clock from when its last acknowledged write was sent.
//   - <PREFIX>_PARTITIONS: key <n> names the owner of partition n. It does
//     not expire: an owner keeps it through its lease and deletes it when
//     it hands the partition over; another member takes it over (a
//     compare-and-set on its revision) only once the owner's member key is
//     gone.
//
// Every member computes the same table from the live members (Assign), lets
// go of the partitions the table gives to others, and claims those it gives
// to itself as soon as they are free. A member that dies holds its
// partitions for at most TTL; a member that stops hands them over at once.
package partition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultTTL bounds how long a dead orchestrator holds its partitions.
const DefaultTTL = 3 * time.Second

// Config configures a Table; the zero value means the documented defaults,
// except for the callbacks, which are required.
type Config struct {
	// Count is the number of partitions; default bus.Partitions.
	Count int
	// TTL bounds how long a dead member holds its partitions; default
	// DefaultTTL.
	TTL time.Duration
	// Replicas of the buckets; default 1.
	Replicas int
	Logger   *slog.Logger
	// Acquire is called when this member comes to own partition p: it
	// begins serving it. An error gives the partition back; it is claimed
	// again later.
	Acquire func(ctx context.Context, p int) error
	// Release is called when this member is to give partition p up (the
	// table gives it to another, or this member leaves): it stops serving
	// p and returns once nothing of p runs here any more. The partition is
	// then handed over.
	Release func(p int)
	// Lost is called when the lease is lost (renewals failed for longer
	// than it lasts, or the key was taken): every partition is gone at once,
	// and must stop without writing anything more. The member then joins
	// again.
	Lost func(err error)
}

// Table is one member's side of the partition table.
type Table struct {
	cfg     Config
	id      string
	started time.Time
	log     *slog.Logger
	members jetstream.KeyValue
	parts   jetstream.KeyValue
	js      jetstream.JetStream // for the reads from the leader (leaderget.go)

	kick chan struct{} // asks the reconciler for a round
	stop chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	joined    bool
	lease     lease
	leaving   bool
	view      map[string]seen  // live members as this one sees them
	keys      map[int]keyEntry // the partitions bucket, as watched
	held      map[int]uint64   // owned partitions → revision of their key
	releasing map[int]bool     // partitions being handed over
}

// keyEntry is one key of the partitions bucket.
type keyEntry struct {
	owner string
	rev   uint64
}

// seen is what the member watch knows of one member.
type seen struct {
	at      time.Time // when its key was last written, as received here
	leaving bool
}

// New opens (or creates) the buckets of subjects' prefix for member id; Join
// then registers it and begins claiming its share. The table exists before
// it is joined, so that the callbacks, which Join's first round calls, may
// use it.
func New(ctx context.Context, js jetstream.JetStream, subjects bus.Subjects, id string, cfg Config) (*Table, error) {
	if cfg.Count <= 0 {
		cfg.Count = bus.Partitions
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	members, err := bus.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: subjects.StreamName("MEMBERS"), Description: "agentfleet: live orchestrators (leases)",
		TTL: cfg.TTL, History: 1, Replicas: max(cfg.Replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("partition: members bucket: %w", err)
	}
	parts, err := bus.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: subjects.StreamName("PARTITIONS"), Description: "agentfleet: the owner of each session partition",
		History: 1, Replicas: max(cfg.Replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("partition: partitions bucket: %w", err)
	}
	t := &Table{
		cfg: cfg, id: id, started: time.Now().UTC(), log: cfg.Logger, members: members, parts: parts, js: js,
		kick: make(chan struct{}, 1), stop: make(chan struct{}),
		view: map[string]seen{}, keys: map[int]keyEntry{}, held: map[int]uint64{}, releasing: map[int]bool{},
	}
	return t, nil
}

// Join registers the member and begins claiming its share; it returns
// after the first round, so that a member alone serves every partition by
// then.
func (t *Table) Join(ctx context.Context) error {
	// Each step is tried again while a cluster that is starting, or has
	// just lost a node, has no leader for the buckets.
	var l lease
	err := bus.RetryJS(ctx, func(ctx context.Context) (err error) {
		l, err = t.register(ctx, false)
		return err
	})
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.lease = l
	t.mu.Unlock()
	var w, pw jetstream.KeyWatcher
	err = bus.RetryJS(ctx, func(ctx context.Context) (err error) {
		// The watchers live as long as the table (Leave stops them), not
		// as long as ctx.
		if w, err = t.members.WatchAll(context.Background()); err != nil {
			return err
		}
		// The members known now, so that the first round already counts
		// those who started with this one.
		if err = t.readInitial(ctx, w); err != nil {
			w.Stop()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("partition: watch members: %w", err)
	}
	err = bus.RetryJS(ctx, func(ctx context.Context) (err error) {
		pw, err = t.parts.WatchAll(context.Background())
		return err
	})
	if err != nil {
		w.Stop()
		return fmt.Errorf("partition: watch partitions: %w", err)
	}
	t.mu.Lock()
	t.joined = true
	t.mu.Unlock()
	t.wg.Add(4)
	go t.follow(w, t.memberUpdate)
	go t.follow(pw, t.keyUpdate)
	go t.renew()
	t.round()
	go t.reconcile()
	return nil
}

// ID returns this member's id.
func (t *Table) ID() string { return t.id }

// TTL returns the lease's time to live.
func (t *Table) TTL() time.Duration { return t.cfg.TTL }

// Valid returns nil while this member's lease certainly holds, an error
// wrapping ErrInDoubt (and bus.ErrTemporary) while renewals go unanswered,
// and one wrapping ErrLost once it ended. Writers do not ask it: they carry
// a fence (Fence), whose Check includes the lease.
func (t *Table) Valid() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.validLocked()
}

func (t *Table) validLocked() error {
	if t.lease.ended != nil {
		return t.lease.ended
	}
	if since := time.Since(t.lease.renewed); since > leaseFor(t.cfg.TTL) {
		// In doubt, not lost: while renewals go unanswered (the bucket's
		// stream is electing a leader, NATS is away) nobody can take the
		// partitions either unless the key expires, and a renewal that
		// gets through under the same revision proves it did not.
		return bus.Temporary(fmt.Errorf("%w: no renewal acknowledged for %v (lease %v)", ErrInDoubt, since.Round(time.Millisecond), leaseFor(t.cfg.TTL)))
	}
	return nil
}

// Owns reports whether this member owns partition p now, and is not
// handing it over. A lease in doubt (renewals unanswered, not found lost)
// still owns: input taken now waits, like every write and ack, until a
// renewal gets through or the lease is found lost (and its runs stop).
// Handing the input back instead would let a later message of the same
// session overtake it, since the server delivers the later one at once and
// the one handed back after it (TestOwnsWhileInDoubt).
func (t *Table) Owns(p int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.held[p]
	return ok && !t.releasing[p] && t.lease.ended == nil
}

// Owned returns the partitions this member owns and is not handing over,
// in order. Release, which runs before the partition leaves the held set
// and its key goes to the next owner, does not see its own partition here:
// a gauge of len(Owned()) set at the end of Release counts it no more, so
// that the gauges of all members never sum past the partitions there are.
func (t *Table) Owned() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var owned []int
	for p := range t.held {
		if !t.releasing[p] {
			owned = append(owned, p)
		}
	}
	slices.Sort(owned)
	return owned
}

// Members returns the live members this one sees, itself included.
func (t *Table) Members() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.liveLocked(false)
}

// liveLocked returns the members seen within TTL; active leaves out those
// leaving.
func (t *Table) liveLocked(active bool) []string {
	var out []string
	for id, s := range t.view {
		if time.Since(s.at) > t.cfg.TTL || active && s.leaving {
			continue
		}
		out = append(out, id)
	}
	if !t.leaving && t.lease.ended == nil && !slices.Contains(out, t.id) {
		out = append(out, t.id)
	}
	slices.Sort(out)
	return out
}

// Leave hands every partition over and leaves the table: the member key
// says it is leaving (the others leave it out of the table and wait for its
// partitions), every partition is released, and the key is deleted. Release
// callbacks bound themselves; each write is bounded by the TTL.
func (t *Table) Leave() error {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.TTL)
	defer cancel()
	t.mu.Lock()
	if !t.joined {
		t.leaving = true
		t.mu.Unlock()
		return nil
	}
	if t.leaving {
		t.mu.Unlock()
		return nil
	}
	t.leaving = true
	l := t.lease
	valid := t.validLocked() == nil
	var held []int
	for p := range t.held {
		if !t.releasing[p] { // those already being handed over finish on their own
			t.releasing[p] = true
			held = append(held, p)
		}
	}
	t.mu.Unlock()
	var errs []error
	if valid {
		nl, err := t.renewOnce(ctx, l, true)
		if err == nil {
			t.setLease(nl)
		} else if _, ours := t.stillOurs(ctx, l); final(err) && ours {
			// A renewal of the renewing loop was stored first (its answer
			// may still be on the way on a slow link): the key is still
			// this member's, and the loop's next renewal says leaving
			// (it reads t.leaving), so two writers do not race on it.
			err = nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("partition: announce leaving: %w", err))
		}
	}
	var wg sync.WaitGroup
	for _, p := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.release(p)
		}()
	}
	wg.Wait()
	close(t.stop)
	t.wg.Wait()
	t.mu.Lock()
	rev, valid := t.lease.rev, t.validLocked() == nil
	t.lease.ended = errors.New("partition: left the table")
	t.mu.Unlock()
	ctx, cancel = context.WithTimeout(context.Background(), t.cfg.TTL)
	defer cancel()
	if valid {
		err := t.members.Delete(ctx, t.id, jetstream.LastRevision(rev))
		if err != nil {
			// A renewal whose answer did not come in time (a busy machine,
			// a slow link) may be stored all the same, at a later revision
			// than the one recorded: the key is still this member's, at
			// that revision.
			if later, ours := t.stillOurs(ctx, lease{rev: rev}); ours {
				err = t.members.Delete(ctx, t.id, jetstream.LastRevision(later))
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("partition: leave: %w", err))
		}
	}
	return errors.Join(errs...)
}

// setLease records a renewed lease unless a later revision is recorded
// already: the renewing loop and Leave may both renew, and the answer of
// the earlier write can come last.
func (t *Table) setLease(nl lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if nl.rev >= t.lease.rev || t.lease.ended != nil {
		t.lease = nl
	}
}

// stillOurs reports whether the member key holds this member's own value
// at a revision later than l's, and which: a renewal of this member's was
// stored that l does not know of.
func (t *Table) stillOurs(ctx context.Context, l lease) (uint64, bool) {
	e, err := t.members.Get(ctx, t.id)
	if err != nil {
		return 0, false
	}
	var m member
	return e.Revision(), json.Unmarshal(e.Value(), &m) == nil && storedRenewal(t.id, t.started, m, e.Revision(), l.rev)
}
