package partition

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func (t *Table) readInitial(ctx context.Context, w jetstream.KeyWatcher) error {
	for {
		select {
		case e := <-w.Updates():
			if e == nil {
				return nil // the initial values are in
			}
			t.note(e)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// note records one member key update in the view.
func (t *Table) note(e jetstream.KeyValueEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(t.view, e.Key())
		return
	}
	var m member
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		t.log.Warn("partition: a member key that does not decode", "key", e.Key(), "err", err)
		return
	}
	t.view[e.Key()] = seen{at: time.Now(), leaving: m.Leaving}
}

// follow hands every update of w to each, until the table stops.
func (t *Table) follow(w jetstream.KeyWatcher, each func(jetstream.KeyValueEntry)) {
	defer t.wg.Done()
	defer w.Stop()
	for {
		select {
		case <-t.stop:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				each(e)
			}
		}
	}
}

// memberUpdate notes a member key's update, and asks for a round when the
// set of members (or who is leaving) changed: a new table.
func (t *Table) memberUpdate(e jetstream.KeyValueEntry) {
	t.mu.Lock()
	before, known := t.view[e.Key()]
	t.mu.Unlock()
	t.note(e)
	t.mu.Lock()
	after, now := t.view[e.Key()]
	t.mu.Unlock()
	if known != now || now && after.leaving != before.leaving {
		t.poke()
	}
}

// keyUpdate mirrors the partitions bucket, and asks for a round whenever a
// partition is handed over (its key deleted), so that its next owner
// claims it at once rather than at its next tick.
func (t *Table) keyUpdate(e jetstream.KeyValueEntry) {
	p, err := strconv.Atoi(e.Key())
	if err != nil {
		return
	}
	put := e.Operation() == jetstream.KeyValuePut
	t.mu.Lock()
	if put {
		t.keys[p] = keyEntry{owner: string(e.Value()), rev: e.Revision()}
	} else {
		delete(t.keys, p)
	}
	t.mu.Unlock()
	if !put {
		t.poke()
	}
}

func (t *Table) poke() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// renew rewrites the member key every TTL/3. When the lease is lost, every
// partition goes at once (Lost), and the member joins again.
