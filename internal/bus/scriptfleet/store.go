// Package scriptfleet keeps the fleet's scripted tools on NATS: the
// JetStream KV store of their definitions, the script server that serves
// them from script workers and follows the store's changes, and the dry-run
// service of write_tool. internal/script is the sandbox they run in,
// internal/scripts the child-process isolation and the nested call_tool
// rules; internal/bus the transport. It may import those, nats.go and the
// agentfleet root types, never the agent core (internal/loop,
// internal/pipeline) nor the orchestrator.
package scriptfleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultBucket is the JetStream KV bucket of the scripted tools.
const DefaultBucket = "agent_tools"

// StoreConfig configures a Store; the zero value means the
// documented defaults.
type StoreConfig struct {
	// Bucket is the KV bucket; default DefaultBucket.
	Bucket string
	// History is how many revisions of each tool the bucket keeps when it
	// is created, at most 64; default 16. A bucket that exists keeps its
	// own setting.
	History uint8
	// Replicas of the bucket when it is created; default 1.
	Replicas int
}

// Store keeps the definitions of scripted tools in a JetStream KV
// bucket, one key per tool name, the value the definition as JSON. It
// implements script.Store and is safe for concurrent use. Revisions are the
// bucket's sequence numbers; the bucket's history keeps earlier versions,
// so that they can be restored.
type Store struct {
	kv jetstream.KeyValue
}

var _ script.Store = (*Store)(nil)

// NewStore binds the bucket of cfg on nc, creating it when it does
// not exist. It fails when JetStream is not available.
func NewStore(ctx context.Context, nc *nats.Conn, cfg StoreConfig) (*Store, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.History == 0 {
		cfg.History = 16
	}
	if cfg.History > jetstream.KeyValueMaxHistory {
		return nil, fmt.Errorf("script store: history of %d revisions exceeds the limit of %d", cfg.History, jetstream.KeyValueMaxHistory)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("script store: %w", err)
	}
	// Looked up, and created only if missing, by whichever process comes
	// first; tried again when processes starting together race.
	var kv jetstream.KeyValue
	err = bus.RetryJS(ctx, func(ctx context.Context) (err error) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket:      cfg.Bucket,
				Description: "agentfleet scripted tools (write_tool), one key per tool",
				History:     cfg.History,
				Replicas:    cfg.Replicas,
			})
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("script store: bucket %s: %w", cfg.Bucket, err)
	}
	return &Store{kv: kv}, nil
}

// Bucket returns the name of the store's bucket.
func (s *Store) Bucket() string { return s.kv.Bucket() }

// Put implements script.Store: def.Revision zero creates the tool,
// otherwise it replaces that revision.
func (s *Store) Put(ctx context.Context, def *script.Definition) (uint64, error) {
	if !bus.ValidToken(def.Name) {
		return 0, fmt.Errorf("script store: %w", bus.CheckToken("tool", def.Name))
	}
	value, err := encodeDefinition(def)
	if err != nil {
		return 0, err
	}
	if def.Revision == 0 {
		rev, err := s.kv.Create(ctx, def.Name, value)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return 0, fmt.Errorf("script store: %s: %w", def.Name, script.ErrExists)
		}
		if err != nil {
			return 0, fmt.Errorf("script store: put %s: %w", def.Name, err)
		}
		return rev, nil
	}
	rev, err := s.kv.Update(ctx, def.Name, value, def.Revision)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("script store: %s at revision %d: %w", def.Name, def.Revision, script.ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("script store: put %s: %w", def.Name, err)
	}
	return rev, nil
}

// Get implements script.Store.
func (s *Store) Get(ctx context.Context, name string) (*script.Definition, error) {
	if !bus.ValidToken(name) {
		return nil, fmt.Errorf("script store: %s: %w", name, script.ErrNotFound)
	}
	e, err := s.kv.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, fmt.Errorf("script store: %s: %w", name, script.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("script store: get %s: %w", name, err)
	}
	return decodeEntry(e)
}

// Delete implements script.Store. It leaves a delete marker; the earlier
// revisions stay in the bucket's history.
func (s *Store) Delete(ctx context.Context, name string) error {
	cur, err := s.Get(ctx, name)
	if err != nil {
		return err
	}
	err = s.kv.Delete(ctx, name, jetstream.LastRevision(cur.Revision))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("script store: delete %s at revision %d: %w", name, cur.Revision, script.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("script store: delete %s: %w", name, err)
	}
	return nil
}

// List implements script.Store.
func (s *Store) List(ctx context.Context) ([]*script.Definition, error) {
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("script store: list: %w", err)
	}
	defer w.Stop()
	var out []*script.Definition
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("script store: list: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("script store: list: the watcher stopped")
			}
			if e == nil {
				slices.SortFunc(out, func(a, b *script.Definition) int { return strings.Compare(a.Name, b.Name) })
				return out, nil
			}
			d, err := decodeEntry(e)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
}

// Revision is one entry of a scripted tool's history.
type Revision struct {
	Revision uint64
	Time     time.Time
	// Deleted marks a delete; Definition is nil then.
	Deleted    bool
	Definition *script.Definition
}

// History returns the revisions of name the bucket keeps, oldest first. The
// error wraps script.ErrNotFound when there are none.
func (s *Store) History(ctx context.Context, name string) ([]Revision, error) {
	if !bus.ValidToken(name) {
		return nil, fmt.Errorf("script store: %s: %w", name, script.ErrNotFound)
	}
	entries, err := s.kv.History(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("script store: %s: %w", name, script.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("script store: history of %s: %w", name, err)
	}
	out := make([]Revision, 0, len(entries))
	for _, e := range entries {
		r := Revision{Revision: e.Revision(), Time: e.Created()}
		if e.Operation() != jetstream.KeyValuePut {
			r.Deleted = true
		} else if r.Definition, err = decodeEntry(e); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Restore makes revision of name the current definition again (whether
// name was since replaced or deleted) and returns the new revision. The
// restored definition is not checked again.
func (s *Store) Restore(ctx context.Context, name string, revision uint64) (uint64, error) {
	e, err := s.kv.GetRevision(ctx, name, revision)
	if err != nil {
		return 0, fmt.Errorf("script store: %s revision %d: %w", name, revision, err)
	}
	if e.Key() != name || e.Operation() != jetstream.KeyValuePut {
		return 0, fmt.Errorf("script store: revision %d is not a version of %s", revision, name)
	}
	d, err := decodeEntry(e)
	if err != nil {
		return 0, err
	}
	d.Revision = 0
	if cur, err := s.Get(ctx, name); err == nil {
		d.Revision = cur.Revision
	} else if !errors.Is(err, script.ErrNotFound) {
		return 0, err
	}
	return s.Put(ctx, d)
}

// Update is one change of the bucket, as Watch delivers it.
type Update struct {
	// Name is the tool that changed.
	Name string
	// Definition is the tool's new definition; nil when it was deleted or
	// when Err is set.
	Definition *script.Definition
	// Revision is the bucket's revision of the change.
	Revision uint64
	// Err says why the stored value is not a definition.
	Err error
	// Synced marks the end of the current definitions: the updates before
	// it are the bucket's state when Watch was called, those after it are
	// changes. The other fields are empty.
	Synced bool
}

// Watch delivers the current definitions, then a Synced update, then every
// change, until ctx ends; then it closes the channel. A consumer must keep
// reading, or the watch stalls.
func (s *Store) Watch(ctx context.Context) (<-chan Update, error) {
	w, err := s.kv.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("script store: watch: %w", err)
	}
	out := make(chan Update, 16)
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			var u Update
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				switch {
				case e == nil:
					u.Synced = true
				case e.Operation() != jetstream.KeyValuePut:
					u.Name, u.Revision = e.Key(), e.Revision()
				default:
					u.Name, u.Revision = e.Key(), e.Revision()
					u.Definition, u.Err = decodeEntry(e)
				}
			}
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// encodeDefinition is the stored form: the JSON of def without the fields
// the store itself keeps.
func encodeDefinition(def *script.Definition) ([]byte, error) {
	d := *def
	d.Revision, d.Updated, d.Replace = 0, time.Time{}, false
	b, err := json.Marshal(&d)
	if err != nil {
		return nil, fmt.Errorf("script store: %s: %w", def.Name, err)
	}
	return b, nil
}

func decodeEntry(e jetstream.KeyValueEntry) (*script.Definition, error) {
	var d script.Definition
	if err := json.Unmarshal(e.Value(), &d); err != nil {
		return nil, fmt.Errorf("script store: %s revision %d is not a tool definition: %w", e.Key(), e.Revision(), err)
	}
	if d.Name != e.Key() {
		return nil, fmt.Errorf("script store: %s revision %d holds the definition of %q", e.Key(), e.Revision(), d.Name)
	}
	d.Revision, d.Updated = e.Revision(), e.Created().UTC()
	return &d, nil
}
