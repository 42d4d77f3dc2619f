package erase

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
)

// StopRequest is the JSON body of a stop: InputSeq is the input stream's
// last sequence when the delete stopped the session, so that input of the
// session stored up to it, delivered to an orchestrator after the stop (a
// delivery it held in its buffer), is refused rather than run.
type StopRequest struct {
	InputSeq uint64 `json:"input_seq,omitempty"`
}

// maxStopBytes bounds a stop's body.
const maxStopBytes = 256

// ParseStopRequest decodes a stop's body: empty, or a StopRequest with no
// other field; the error says what is wrong.
func ParseStopRequest(data []byte) (StopRequest, error) {
	var req StopRequest
	if len(data) > maxStopBytes {
		return req, fmt.Errorf("stop of %d bytes, the limit is %d", len(data), maxStopBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return req, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("stop is not JSON of {input_seq}: %w", err)
	}
	return req, nil
}

// TombstoneTTL is how long an orchestrator refuses the input of a deleted
// session stored before its delete: longer than a delivery waits in its
// buffer, far shorter than the input stream keeps messages.
const TombstoneTTL = 10 * time.Minute

// maxTombstones bounds the sessions remembered; past it the oldest go.
const maxTombstones = 100_000

// Tombstones are the sessions deleted lately, with the input stream's
// sequence up to which their input was stored before the delete. Safe for
// concurrent use; the zero value is empty.
type Tombstones struct {
	mu    sync.Mutex
	m     map[string]tombstone
	order []string
}

type tombstone struct {
	seq uint64
	at  time.Time
}

// Add remembers that the session was deleted with input stored up to seq
// (the higher of two stops).
func (t *Tombstones) Add(agent, session string, seq uint64, now time.Time) {
	if t == nil || seq == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]tombstone{}
	}
	k := agent + "." + session
	old, ok := t.m[k]
	if !ok {
		t.order = append(t.order, k)
	}
	t.m[k] = tombstone{seq: max(seq, old.seq), at: now}
	for len(t.order) > 0 && (len(t.m) > maxTombstones || now.Sub(t.m[t.order[0]].at) > TombstoneTTL) {
		delete(t.m, t.order[0])
		t.order = t.order[1:]
	}
}

// Refuses returns why input of the session stored at stream sequence seq
// may not run (it was stored before the session's delete), or nil: input
// after the delete, input of no stream (seq 0), a session not deleted in
// the last TombstoneTTL.
func (t *Tombstones) Refuses(agent, session string, seq uint64, now time.Time) error {
	if t == nil || seq == 0 {
		return nil
	}
	t.mu.Lock()
	ts, ok := t.m[agent+"."+session]
	t.mu.Unlock()
	if !ok || seq > ts.seq || now.Sub(ts.at) > TombstoneTTL {
		return nil
	}
	return fmt.Errorf("%w: input %d was stored before the delete", bus.ErrDeleted, seq)
}
