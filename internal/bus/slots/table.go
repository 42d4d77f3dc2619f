package slots

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// RefusalMemory is how long what a refusal taught of the other callers'
// calls on a worker holds (Worker.Others, and that the worker is not
// chosen): those calls end too, and a caller with no call of its own there
// would otherwise never learn that they did.
const RefusalMemory = 250 * time.Millisecond

// Offer is a worker of a tool as the fleet knows it: one that takes calls
// on a subject of its own, with the concurrency it declares.
type Offer struct {
	ID    string
	Limit int
}

// Table is one caller's knowledge of the slots of the workers it may send
// a call to directly, kept from the fleet (Set) and from what its calls
// see (Took, Ended, Refused, Gone). It trusts its own count of its calls
// on each worker, and a worker's count only in a refusal: the frames of
// different calls are handled in no set order, so a count a result or an
// ack carried would be out of date as often as not. Pick chooses with
// Choose. It is safe for concurrent use; its zero value knows no worker,
// and Pick then returns "".
type Table struct {
	// any is whether some tool has workers: a client without them (no
	// fleet watched, a fleet of older workers) picks without the lock.
	any atomic.Bool
	mu  sync.Mutex
	// clock is time.Now, unless a test sets it.
	clock   func() time.Time
	workers map[string]*known   // by instance id
	tools   map[string][]string // ids of the workers of each tool
	scratch []Worker
}

// known is one worker of a Table.
type known struct {
	Worker
	// refused: the worker refused a call of this caller since the last
	// one it ended; it is not chosen until one ends, or RefusalMemory
	// passed.
	refused bool
	// gone: its subject had no subscriber; not chosen until the fleet
	// lists it again.
	gone bool
	// grown counts the calls it ended since Ceiling last grew.
	grown int
	// refusedAt is when it last refused a call of this caller.
	refusedAt time.Time
}

// Set replaces the workers of every tool with offers, keeping what is
// known of those that stay. A worker listed again is no longer gone.
func (t *Table) Set(offers map[string][]Offer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	workers := make(map[string]*known, len(t.workers))
	t.tools = make(map[string][]string, len(offers))
	for tool, os := range offers {
		for _, o := range os {
			if o.ID == "" || o.Limit <= 0 {
				continue
			}
			k := workers[o.ID]
			if k == nil {
				if k = t.workers[o.ID]; k == nil {
					k = &known{Worker: Worker{ID: o.ID}}
				}
				k.gone = false
				k.Limit = 0
				workers[o.ID] = k
			}
			k.Limit = max(k.Limit, o.Limit)
			t.tools[tool] = append(t.tools[tool], o.ID)
		}
	}
	t.workers = workers
	t.any.Store(len(t.tools) > 0)
}

// Pick chooses the worker a call of tool goes to and counts the call on
// it; the caller must end it with Ended, Refused or Gone. It returns ""
// when no known worker of the tool has a free slot: the call then goes to
// the tool's queue group.
func (t *Table) Pick(tool string) string {
	if !t.any.Load() {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := t.tools[tool]
	if len(ids) == 0 {
		return ""
	}
	t.scratch = t.scratch[:0]
	var now time.Time
	for _, id := range ids {
		k := t.workers[id]
		if k.refused || k.Others > 0 {
			if now.IsZero() {
				now = t.now()
			}
			if now.Sub(k.refusedAt) >= RefusalMemory {
				k.refused, k.Others = false, 0
			}
		}
		w := k.Worker
		if k.refused || k.gone {
			w.Limit = 0
		}
		t.scratch = append(t.scratch, w)
	}
	i := Choose(t.scratch, rand.Uint32())
	if i < 0 {
		return ""
	}
	t.workers[ids[i]].Mine++
	return ids[i]
}

// Took counts on worker id a call sent to the queue group that it
// acknowledged, and lifts its being gone; it reports whether id is known,
// and so whether the call must be ended.
func (t *Table) Took(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.workers[id]
	if k == nil {
		return false
	}
	k.Mine++
	k.gone = false // its ack says it is there
	return true
}

// Ended ends a call counted on worker id: its final frame came, or the
// call was abandoned. The worker is no longer refused, and the others'
// calls it last reported count one less: they end too, in time.
func (t *Table) Ended(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.workers[id]
	if k == nil {
		return
	}
	k.Mine = max(k.Mine-1, 0)
	k.refused = false
	k.Others = max(k.Others-1, 0)
	if k.Ceiling > 0 {
		// The ceiling rises by one for each ceiling's worth of calls
		// ended (additive increase), until it reaches the declared limit.
		if k.grown++; k.grown >= k.Ceiling {
			k.Ceiling, k.grown = k.Ceiling+1, 0
			if k.Ceiling >= min(k.Limit, MaxClaim) {
				k.Ceiling = 0
			}
		}
	}
}

// Refused ends a call counted on worker id that it refused as busy,
// holding inFlight calls as its busy frame says (0: says none). The
// worker is not chosen again until a call of this caller on it ends, or
// RefusalMemory passed; when it refused below its declared limit, that
// load is its Ceiling.
func (t *Table) Refused(id string, inFlight int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.workers[id]
	if k == nil {
		return
	}
	k.Mine = max(k.Mine-1, 0)
	load := max(inFlight, k.Mine+k.Others)
	if load < min(k.Limit, MaxClaim) {
		k.Ceiling, k.grown = max(load, 1), 0
	}
	k.Others = max(load-k.Mine, 0)
	k.refused, k.refusedAt = true, t.now()
}

// Gone ends a call counted on worker id whose subject had no subscriber:
// the worker is not chosen again until Set lists it again.
func (t *Table) Gone(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k := t.workers[id]; k != nil {
		k.Mine = max(k.Mine-1, 0)
		k.gone = true
	}
}

func (t *Table) now() time.Time {
	if t.clock != nil {
		return t.clock()
	}
	return time.Now()
}

// Workers returns what the table knows of the workers of tool, for tests
// and metrics.
func (t *Table) Workers(tool string) []Worker {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Worker
	for _, id := range t.tools[tool] {
		out = append(out, t.workers[id].Worker)
	}
	return out
}
