package observe

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go/jetstream"
)

// partitionsBucket is the table of partition owners (prefix "agent"),
// bus.Subjects.StreamName("PARTITIONS").
const partitionsBucket = "AGENT_PARTITIONS"

// Owners follows AGENT_PARTITIONS with a KV watch: the owner of each
// partition, and when its key last changed as seen here.
type Owners struct {
	w jetstream.KeyWatcher

	mu    sync.Mutex
	owner map[int]string
	at    map[int]time.Time
}

// WatchOwners opens the bucket (waiting, bounded, until an orchestrator
// created it) and starts following it.
func WatchOwners(ctx context.Context, js jetstream.JetStream) (*Owners, error) {
	var kv jetstream.KeyValue
	if err := proc.WaitFor(ctx, proc.StartTimeout, "the "+partitionsBucket+" bucket", func() (bool, error) {
		var err error
		kv, err = js.KeyValue(ctx, partitionsBucket)
		return err == nil, err
	}); err != nil {
		return nil, err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", partitionsBucket, err)
	}
	o := &Owners{w: w, owner: map[int]string{}, at: map[int]time.Time{}}
	go func() {
		for e := range w.Updates() {
			if e == nil {
				continue // the initial values are all delivered
			}
			p, err := strconv.Atoi(e.Key())
			if err != nil {
				continue
			}
			o.mu.Lock()
			if e.Operation() == jetstream.KeyValuePut {
				o.owner[p] = string(e.Value())
			} else {
				delete(o.owner, p)
			}
			o.at[p] = time.Now()
			o.mu.Unlock()
		}
	}()
	return o, nil
}

func (o *Owners) Stop() { _ = o.w.Stop() }

// Snapshot returns the owner of every partition that has one.
func (o *Owners) Snapshot() map[int]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := make(map[int]string, len(o.owner))
	for p, id := range o.owner {
		m[p] = id
	}
	return m
}

// Counts returns how many partitions each owner holds.
func (o *Owners) Counts() map[string]int {
	c := map[string]int{}
	for _, id := range o.Snapshot() {
		c[id]++
	}
	return c
}

// Balanced reports whether every partition is owned by one of ids and each
// of them owns between lo and hi.
func (o *Owners) Balanced(ids []string, lo, hi int) (bool, error) {
	snap := o.Snapshot()
	c := map[string]int{}
	for _, id := range snap {
		c[id]++
	}
	total := 0
	for _, id := range ids {
		total += c[id]
		if c[id] < lo || c[id] > hi {
			return false, fmt.Errorf("owned %v (of %d keys), want %d to %d each of %v", c, len(snap), lo, hi, ids)
		}
	}
	if total != bus.Partitions {
		return false, fmt.Errorf("owned %v: %d of %d by %v", c, total, bus.Partitions, ids)
	}
	return true, nil
}

// MovedAt reports whether every partition of ps is owned by one of ids,
// and when the last of their keys changed.
func (o *Owners) MovedAt(ps []int, ids []string) (bool, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var last time.Time
	for _, p := range ps {
		ok := false
		for _, id := range ids {
			ok = ok || o.owner[p] == id
		}
		if !ok {
			return false, time.Time{}
		}
		if o.at[p].After(last) {
			last = o.at[p]
		}
	}
	return true, last
}

// OwnedBy returns the partitions that id owns in snap.
func OwnedBy(snap map[int]string, id string) []int {
	var ps []int
	for p := range bus.Partitions {
		if snap[p] == id {
			ps = append(ps, p)
		}
	}
	return ps
}
