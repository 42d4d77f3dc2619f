package toolrpc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// OutcomeBucket is the key-value bucket where workers record the outcome of
// each call of a tool that is neither idempotent nor read-only, so that an
// orchestrator that takes over a run whose calls were in flight can use the
// result instead of calling the outcome unknown (docs/PROTOCOL.md, "Recorded
// outcomes").
const OutcomeBucket = "agentfleet_outcomes"

// Defaults of OutcomeConfig.
const (
	DefaultOutcomeMaxAge    = time.Hour
	DefaultOutcomeMaxBytes  = 256 << 20
	DefaultOutcomeMaxRecord = 64 << 10
	DefaultOutcomeTimeout   = time.Second
)

// OutcomeConfig configures the outcome bucket; the zero value means the
// documented defaults.
type OutcomeConfig struct {
	// MaxAge is how long a record is kept; default DefaultOutcomeMaxAge.
	// A run taken over later than that finds no record: unknown.
	MaxAge time.Duration
	// MaxBytes bounds the bucket; default DefaultOutcomeMaxBytes. A full
	// bucket refuses new records (KV buckets discard new), whose calls are
	// then of unknown outcome as without a bucket, until old ones expire.
	MaxBytes int64
	// MaxRecord bounds the encoded result frame a record holds; default
	// DefaultOutcomeMaxRecord. A larger result is recorded as finished with
	// its size but without its body.
	MaxRecord int
	// Timeout bounds each write of a record; default DefaultOutcomeTimeout.
	// A write that fails or times out is logged, and the worker replies
	// anyway.
	Timeout time.Duration
	// Replicas of the bucket when it is created; default 1.
	Replicas int
}

func (c OutcomeConfig) withDefaults() OutcomeConfig {
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultOutcomeMaxAge
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultOutcomeMaxBytes
	}
	if c.MaxRecord <= 0 {
		c.MaxRecord = DefaultOutcomeMaxRecord
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultOutcomeTimeout
	}
	return c
}

// Outcomes is the outcome bucket, as workers write it and orchestrators
// read it. It is safe for concurrent use.
type Outcomes struct {
	kv  jetstream.KeyValue
	cfg OutcomeConfig
}

// OpenOutcomes opens the outcome bucket on js, creating it with cfg if it
// is missing. The error names the bucket.
func OpenOutcomes(ctx context.Context, js jetstream.JetStream, cfg OutcomeConfig) (*Outcomes, error) {
	cfg = cfg.withDefaults()
	kv, err := bus.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      OutcomeBucket,
		Description: "agentfleet: outcomes of calls of tools that are not idempotent, by call",
		History:     1,
		TTL:         cfg.MaxAge,
		MaxBytes:    cfg.MaxBytes,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, err
	}
	return &Outcomes{kv: kv, cfg: cfg}, nil
}

// OutcomeKey returns the key of the record of call id of run runID of
// session: "c." and the lowercase hex SHA-256 of session, a zero byte,
// runID, a zero byte and id. Call ids come from models and may hold
// anything; the hash makes every one a valid key of bounded length, and
// the session and run keep ids that repeat across runs apart.
func OutcomeKey(session, runID, id string) string {
	h := sha256.New()
	h.Write([]byte(session))
	h.Write([]byte{0})
	h.Write([]byte(runID))
	h.Write([]byte{0})
	h.Write([]byte(id))
	var sum [sha256.Size]byte
	return "c." + hex.EncodeToString(h.Sum(sum[:0]))
}

// The states of a record.
const (
	OutcomeStarted = "started" // a worker took the call and runs it
	OutcomeDone    = "done"    // the call ended; Frame is its final frame
)

// OutcomeRecord is the value of a call's key in the outcome bucket, JSON.
type OutcomeRecord struct {
	State string `json:"state"`
	// Worker is the worker's name/id (as in its frames), WorkerID its
	// instance id, by which the fleet knows whether it is still there.
	Worker   string `json:"worker"`
	WorkerID string `json:"worker_id"`
	Tool     string `json:"tool,omitempty"`
	// Frame is the call's final frame as the worker sent it (msgpack,
	// base64 in JSON); absent when Omitted.
	Frame []byte `json:"frame,omitempty"`
	// Size is the size of the final frame; Omitted says it exceeded the
	// bound and is not recorded.
	Size    int  `json:"size,omitempty"`
	Omitted bool `json:"omitted,omitempty"`
}

// ErrNoOutcome is returned by Outcomes.Get for a call without a record.
var ErrNoOutcome = errors.New("no recorded outcome")

// started records that the worker began a call, unless a record exists.
func (o *Outcomes) started(key string, rec *OutcomeRecord) error {
	b, _ := json.Marshal(rec)
	ctx, cancel := context.WithTimeout(context.Background(), o.cfg.Timeout)
	defer cancel()
	_, err := o.kv.Create(ctx, key, b)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil // an earlier attempt's record; the final one replaces it
	}
	return err
}

// done records the final frame of a call, or only its size when it is
// larger than MaxRecord.
func (o *Outcomes) done(key string, rec *OutcomeRecord, frame []byte) error {
	rec.State, rec.Size = OutcomeDone, len(frame)
	if len(frame) > o.cfg.MaxRecord {
		rec.Omitted = true
	} else {
		rec.Frame = frame
	}
	b, _ := json.Marshal(rec)
	ctx, cancel := context.WithTimeout(context.Background(), o.cfg.Timeout)
	defer cancel()
	_, err := o.kv.Put(ctx, key, b)
	return err
}

// Get returns the record under key; ErrNoOutcome when there is none.
func (o *Outcomes) Get(ctx context.Context, key string) (*OutcomeRecord, error) {
	e, err := o.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrNoOutcome
	}
	if err != nil {
		return nil, fmt.Errorf("outcome bucket: %w", err)
	}
	return decodeRecord(key, e.Value())
}

// decodeRecord decodes the record under key, naming the key on error.
func decodeRecord(key string, b []byte) (*OutcomeRecord, error) {
	var rec OutcomeRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("outcome bucket: record %s: %w", key, err)
	}
	if rec.State != OutcomeStarted && rec.State != OutcomeDone {
		return nil, fmt.Errorf("outcome bucket: record %s: unknown state %q", key, rec.State)
	}
	return &rec, nil
}

// callOutcome is a call's record in the outcome bucket, as its worker
// writes it: the marker when the call begins, the final frame when it ends.
type callOutcome struct {
	o      *Outcomes
	key    string
	rec    OutcomeRecord
	marked chan struct{} // closed once the marker's write ended
}

// recordsOutcome reports whether the calls of t have their outcomes
// recorded: those of a tool neither idempotent nor read-only, whose
// outcome would otherwise be unknown to an orchestrator taking over.
func recordsOutcome(o *Outcomes, c *call) bool {
	a := c.t.Annotations
	return o != nil && !a.Idempotent && !a.ReadOnly
}

// beginOutcome writes the call's marker, in the background: the call does
// not wait for it. Without a bucket, or for a tool whose calls may run
// again, it does nothing.
func (c *call) beginOutcome() {
	s := c.s
	if !recordsOutcome(s.cfg.Outcomes, c) {
		return
	}
	r := &callOutcome{o: s.cfg.Outcomes, key: OutcomeKey(c.req.Session, c.req.RunID, c.req.ID), marked: make(chan struct{})}
	r.rec = OutcomeRecord{State: OutcomeStarted, Worker: s.name, WorkerID: s.id, Tool: c.t.Name}
	c.outcomeRec = r
	go func() {
		defer close(r.marked)
		if err := r.o.started(r.key, &r.rec); err != nil {
			c.logWarn("record the call's start in "+OutcomeBucket, "err", err)
		}
	}()
}

// endOutcome records the call's final frame (nil: it could not be sent,
// of size bytes) before the frame is sent, within the bucket's Timeout:
// on failure the call's outcome stays unknown, and the frame goes out
// all the same.
func (c *call) endOutcome(frame []byte, size int) {
	r := c.outcomeRec
	if r == nil {
		return
	}
	c.outcomeRec = nil
	select {
	case <-r.marked:
	case <-time.After(r.o.cfg.Timeout):
	}
	var err error
	if frame == nil {
		r.rec.State, r.rec.Size, r.rec.Omitted = OutcomeDone, size, true
		b, _ := json.Marshal(&r.rec)
		ctx, cancel := context.WithTimeout(context.Background(), r.o.cfg.Timeout)
		_, err = r.o.kv.Put(ctx, r.key, b)
		cancel()
	} else {
		err = r.o.done(r.key, &r.rec, frame)
	}
	if err != nil {
		c.logWarn("record the call's outcome in "+OutcomeBucket, "err", err)
	}
}

// OpenOutcomesOn is OpenOutcomes on nc for a worker: a server without
// JetStream (or an account without it) is no error, and returns nil, so
// that the worker serves without recording outcomes.
func OpenOutcomesOn(ctx context.Context, nc *nats.Conn, cfg OutcomeConfig) (*Outcomes, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("outcome bucket: %w", err)
	}
	// One look-up first: it tells a server without JetStream at once
	// (EnsureKeyValue would wait for JetStream to come), and needs no right
	// beyond the bucket's own stream.
	_, err = js.KeyValue(ctx, OutcomeBucket)
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return nil, nil
	case err != nil && !errors.Is(err, jetstream.ErrBucketNotFound):
		return nil, fmt.Errorf("outcome bucket: %w", err)
	}
	return OpenOutcomes(ctx, js, cfg)
}
