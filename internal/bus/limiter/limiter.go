// Package limiter enforces the fleet's shared model quota on NATS: the
// state of each model's buckets (package quota) is one key of a JetStream
// KV bucket that every orchestrator reads and writes with compare-and-set,
// so that the fleet's combined rate stays within each model's limits, a
// provider's Retry-After seen by one orchestrator pauses all of them, and
// interactive calls anywhere go before batch calls. Each orchestrator
// queues its own waiting calls (quota.Queue: by priority, round-robin
// across agents) and offers only the head of each model's queue to the
// shared state, so that a waiting call costs no NATS traffic.
//
// The bucket is kept in memory: a grant is one read and one write, no
// disk. A NATS restart forgets it; every model then starts again with
// full buckets (one burst of slack), no pause and no leases.
package limiter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/quota"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Model is one model the limiter knows: the key of its state (its
// endpoint and name) and its limits.
type Model struct {
	Endpoint string
	Limits   quota.Limits
}

// Config configures a Limiter.
type Config struct {
	// Node names this orchestrator in urgent marks; required, unique in
	// the fleet.
	Node string
	// Subjects gives the bucket's name: <PREFIX>_QUOTA.
	Subjects bus.Subjects
	// Models maps model names to their endpoint and limits. A model not
	// here is admitted at once.
	Models map[string]Model
	// LeaseTTL is how long the concurrency slot of a call in flight
	// stays taken unless renewed (it is renewed every third of it): an
	// orchestrator that dies mid-call frees its slots this long after.
	// Optional; default 30s.
	LeaseTTL time.Duration
	// MaxWait caps one sleep of a waiting call between two looks at the
	// shared state. Optional; default 1s.
	MaxWait time.Duration
	// Replicas of the bucket; default 1.
	Replicas int
	// Observer, if set, receives queue depths and waits (metrics).
	Observer Observer
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Observer receives what the limiter's queues do, per priority rank name
// (quota.RankName).
type Observer interface {
	// Queued sets the calls waiting at a priority in this orchestrator.
	Queued(priority string, n int)
	// Waited records how long a granted call waited.
	Waited(priority string, d time.Duration)
}

// Limiter is the quota.Gate of one orchestrator. It is safe for concurrent
// use; Close stops it.
type Limiter struct {
	cfg     Config
	kv      jetstream.KeyValue
	js      jetstream.JetStream
	bucket  string
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	models  map[string]*model
	spendMu sync.Mutex
	spend   map[string]spent // agent → today's spend as last read
}

var _ quota.Gate = (*Limiter)(nil)

// New opens (or creates) the quota bucket of cfg.Subjects' prefix.
func New(ctx context.Context, nc *nats.Conn, cfg Config) (*Limiter, error) {
	if cfg.Node == "" {
		return nil, errors.New("limiter: config Node is empty")
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for name, m := range cfg.Models {
		if err := m.Limits.Check(); err != nil {
			return nil, fmt.Errorf("limiter: model %q: %w", name, err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("limiter: %w", err)
	}
	l := &Limiter{cfg: cfg, js: js, bucket: cfg.Subjects.StreamName("QUOTA"), log: cfg.Logger, models: map[string]*model{}, spend: map[string]spent{}}
	if err := l.open(ctx); err != nil {
		return nil, err
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// open looks the bucket up, creating it when missing (after a NATS
// restart, too).
func (l *Limiter) open(ctx context.Context) error {
	kv, err := bus.EnsureKeyValue(ctx, l.js, jetstream.KeyValueConfig{
		Bucket: l.bucket, Description: "agentfleet: the fleet's shared model quota and spend",
		History: 1, Storage: jetstream.MemoryStorage, Replicas: max(l.cfg.Replicas, 1),
		// Spend keys are per day; the state of a model unused for a day
		// starts again full.
		TTL:      48 * time.Hour,
		MaxBytes: 64 << 20, MaxValueSize: 64 << 10,
	})
	if err != nil {
		return fmt.Errorf("limiter: quota bucket %s: %w", l.bucket, err)
	}
	l.mu.Lock()
	l.kv = kv
	l.mu.Unlock()
	return nil
}

func (l *Limiter) store() jetstream.KeyValue {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kv
}

// Close stops the limiter's queues; waiting calls fail with
// ErrClosed.
func (l *Limiter) Close() {
	l.cancel()
	l.wg.Wait()
}

// ErrClosed is the error of a call that waited when the limiter closed.
var ErrClosed = errors.New("limiter: closed")

// Key returns the KV key of a model's state: "m.<endpoint>.<model>", each
// token made safe for a key.
func Key(endpoint, model string) string {
	return "m." + keyToken(endpoint) + "." + keyToken(model)
}

// keyToken maps s onto the characters a KV key token may hold, escaping
// the others (and '_', the escape) as _XX.
func keyToken(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// Admit implements quota.Gate: it queues the call behind this
// orchestrator's other calls for its model and returns when the shared
// state grants it. The first time it must wait, the call's run gets a
// model.waiting event (through c.Notify).
func (l *Limiter) Admit(ctx context.Context, c quota.Call) (quota.Ticket, error) {
	m := l.model(c.Model)
	if m == nil {
		return noTicket{}, nil
	}
	return m.admit(ctx, c)
}

// model returns the queue of a known model, started at its first call.
func (l *Limiter) model(name string) *model {
	cfgm, ok := l.cfg.Models[name]
	if !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.models[name]
	if m == nil {
		m = &model{l: l, name: name, key: Key(cfgm.Endpoint, name), lim: cfgm.Limits, kick: make(chan struct{}, 1)}
		l.models[name] = m
		l.wg.Add(1)
		go m.pump()
	}
	return m
}

// noTicket is the ticket of a model without limits.
type noTicket struct{}

func (noTicket) Done(*agentfleet.Usage, int, time.Duration) {}

// cas reads key's state, applies f to it, and writes the result if f says
// so, with compare-and-set, trying again when another orchestrator wrote
// in between. A value that does not decode (written by something else) is
// taken as a fresh state and overwritten.
func (l *Limiter) cas(ctx context.Context, key string, f func(s quota.State, now int64) (quota.State, bool)) error {
	for try := 0; ; try++ {
		kv := l.store()
		var (
			s   quota.State
			rev uint64
		)
		e, err := kv.Get(ctx, key)
		switch {
		case err == nil:
			rev = e.Revision()
			if json.Unmarshal(e.Value(), &s) != nil {
				s = quota.State{}
			}
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		case errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound):
			if oerr := l.open(ctx); oerr != nil {
				return oerr
			}
			continue
		default:
			return err
		}
		next, write := f(s, time.Now().UnixNano())
		if !write {
			return nil
		}
		b, err := json.Marshal(next)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, b)
		} else {
			_, err = kv.Update(ctx, key, b, rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !isWrongSequence(err) {
			return err
		}
		if try > 1000 {
			return fmt.Errorf("limiter: %s: compare-and-set lost %d times", key, try)
		}
	}
}

// isWrongSequence reports the error of an update whose revision is stale,
// as the server words it.
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// newLease names a call in flight.
func newLease(node string) string { return node + "." + nuid.Next() }

// Queued returns how many calls for model wait in this orchestrator at
// priority (its rank: interactive, default or batch).
func (l *Limiter) Queued(model, priority string) int {
	l.mu.Lock()
	m := l.models[model]
	l.mu.Unlock()
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.q.LenRank(quota.Rank(priority))
}
