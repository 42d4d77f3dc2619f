package toolrpc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/nats-io/nats.go"
)

// HeaderFence carries the ownership fence of the session a call runs for,
// as "<partition>.<epoch>.<owner>" (FormatFence): the partition of the
// session, the epoch of its owner's claim and the owner's id. A worker
// keeps the highest epoch it saw per partition and refuses a call whose
// epoch is lower (the sender lost the partition to a later claim) with an
// error frame of code wire.CodeFenced. Calls of a fleet without partition
// table (in memory, or outside a run) carry none and are not checked.
const HeaderFence = "Agentfleet-Fence"

// Defaults of the worker's memory of fences (ServerConfig.FenceTTL and
// FenceKeys).
const (
	// DefaultFenceTTL is how long a worker remembers a partition's highest
	// epoch after its last call: far longer than a lease (seconds), so
	// that an owner deposed while paused or cut off is still refused when
	// it comes back.
	DefaultFenceTTL = time.Hour
	// DefaultFenceKeys bounds the partitions remembered; a fleet has
	// bus.Partitions of them (64) unless configured otherwise.
	DefaultFenceKeys = 4096
)

// ErrFenced is what the error of a call refused by its worker as fenced
// matches with errors.Is (and ownership.ErrFenced too): the call did not
// run, and its sender no longer owns the session.
var ErrFenced = fmt.Errorf("tool call fenced by its worker: %w", ownership.ErrFenced)

// FormatFence returns the HeaderFence value of f.
func FormatFence(f ownership.Fence) string {
	var b [96]byte
	v := strconv.AppendInt(b[:0], int64(f.Partition), 10)
	v = append(v, '.')
	v = strconv.AppendUint(v, f.Epoch, 10)
	v = append(v, '.')
	return string(v) + f.Owner
}

// fenceHeaders caches the request header of each fence sent: a session's
// fence is the same for all its calls, and its header is only read once
// made, so the requests of its calls share one, and a call's only header
// (no trace context) costs no allocation. At most maxCachedFences; the
// cache starts again when full.
var fenceHeaders struct {
	mu sync.RWMutex
	m  map[ownership.Fence]nats.Header
}

const maxCachedFences = 4096

// fenceHeader returns the request header of an untraced call with fence f,
// shared: it must not be changed.
func fenceHeader(f ownership.Fence) nats.Header {
	fenceHeaders.mu.RLock()
	h, ok := fenceHeaders.m[f]
	fenceHeaders.mu.RUnlock()
	if ok {
		return h
	}
	h = nats.Header{HeaderFence: []string{FormatFence(f)}}
	fenceHeaders.mu.Lock()
	if fenceHeaders.m == nil || len(fenceHeaders.m) >= maxCachedFences {
		fenceHeaders.m = map[ownership.Fence]nats.Header{}
	}
	fenceHeaders.m[f] = h
	fenceHeaders.mu.Unlock()
	return h
}

// withFence returns hdr with f's header added: a shared header when hdr is
// nil, hdr itself otherwise. A zero epoch adds nothing.
func withFence(hdr nats.Header, f ownership.Fence) nats.Header {
	switch {
	case f.Epoch == 0:
		return hdr
	case hdr == nil:
		return fenceHeader(f)
	}
	hdr.Set(HeaderFence, FormatFence(f))
	return hdr
}

// maxFenceHeader bounds a HeaderFence value, owner id included.
const maxFenceHeader = 256

// ParseFence parses a HeaderFence value. The error names the header, the
// value (cut) and the part that is wrong.
func ParseFence(v string) (ownership.Fence, error) {
	bad := func(why string) (ownership.Fence, error) {
		shown := v
		if len(shown) > 64 {
			shown = shown[:64] + "…"
		}
		return ownership.Fence{}, fmt.Errorf("header %s: %q: want <partition>.<epoch>.<owner>: %s", HeaderFence, shown, why)
	}
	if len(v) > maxFenceHeader {
		return bad(fmt.Sprintf("%d bytes, more than %d", len(v), maxFenceHeader))
	}
	ps, rest, ok := strings.Cut(v, ".")
	if !ok {
		return bad("no '.' after the partition")
	}
	es, owner, ok := strings.Cut(rest, ".")
	if !ok {
		return bad("no '.' after the epoch")
	}
	p, err := strconv.ParseUint(ps, 10, 31)
	if err != nil {
		return bad(fmt.Sprintf("partition %q is not a number from 0 to 2^31-1", ps))
	}
	e, err := strconv.ParseUint(es, 10, 64)
	if err != nil || e == 0 {
		return bad(fmt.Sprintf("epoch %q is not a number from 1 to 2^64-1", es))
	}
	if owner == "" || bus.HeaderValue(owner) != owner {
		return bad("the owner is empty, or not one line of printable text")
	}
	return ownership.Fence{Partition: int(p), Epoch: e, Owner: owner}, nil
}

// seenFence is what a worker remembers of a partition: the highest epoch
// it saw, that epoch's owner, and when it last saw it.
type seenFence struct {
	epoch uint64
	owner string
	at    time.Time
}

// fenceVerdict is the decision on a call's fence.
type fenceVerdict uint8

const (
	// fenceFirst: the partition is not remembered (or was forgotten after
	// the TTL): accept and remember.
	fenceFirst fenceVerdict = iota
	// fenceNewer: a later claim than the one remembered: accept and
	// remember it instead.
	fenceNewer
	// fenceSame: the claim remembered: accept, and remember it anew.
	fenceSame
	// fenceOlder: an earlier claim than one already seen: refuse.
	fenceOlder
	// fenceConflict: the epoch remembered with another owner, which no
	// claim gives (an epoch is the revision of one claim): refuse.
	fenceConflict
)

// accepts reports whether the call runs; every accepted fence is
// remembered (with the time, so that the TTL counts from the last call).
func (v fenceVerdict) accepts() bool { return v <= fenceSame }

// decideFence decides on a call carrying fence got, given what the worker
// remembers of its partition (known, if ok), at now, with memory ttl.
func decideFence(known seenFence, ok bool, got ownership.Fence, now time.Time, ttl time.Duration) fenceVerdict {
	switch {
	case !ok || now.Sub(known.at) >= ttl:
		return fenceFirst
	case got.Epoch > known.epoch:
		return fenceNewer
	case got.Epoch < known.epoch:
		return fenceOlder
	case got.Owner != known.owner:
		return fenceConflict
	}
	return fenceSame
}

// fences is a worker's memory of the highest epoch per partition, bounded
// in keys and expiring.
type fences struct {
	ttl   time.Duration
	limit int

	mu   sync.Mutex
	seen map[int]seenFence
}

func newFences(ttl time.Duration, limit int) *fences {
	if ttl <= 0 {
		ttl = DefaultFenceTTL
	}
	if limit <= 0 {
		limit = DefaultFenceKeys
	}
	return &fences{ttl: ttl, limit: limit, seen: map[int]seenFence{}}
}

// admit decides on fence f at now and remembers it when accepted. It
// returns nil, or the error that refuses the call (wrapping ErrFenced).
func (fs *fences) admit(f ownership.Fence, now time.Time) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	known, ok := fs.seen[f.Partition]
	switch v := decideFence(known, ok, f, now, fs.ttl); v {
	case fenceOlder, fenceConflict:
		return fmt.Errorf("%w: the call's fence (%s) is older than the claim this worker saw %v ago (epoch %d, owner %q); the call did not run",
			ErrFenced, f, now.Sub(known.at).Round(time.Millisecond), known.epoch, known.owner)
	}
	if !ok && len(fs.seen) >= fs.limit {
		fs.evict(now)
	}
	fs.seen[f.Partition] = seenFence{epoch: f.Epoch, owner: f.Owner, at: now}
	return nil
}

// evict makes room for one key: it drops the expired keys, or else the one
// seen longest ago. fs.mu held.
func (fs *fences) evict(now time.Time) {
	oldest, found := 0, false
	for p, s := range fs.seen {
		if now.Sub(s.at) >= fs.ttl {
			delete(fs.seen, p)
			continue
		}
		if !found || s.at.Before(fs.seen[oldest].at) {
			oldest, found = p, true
		}
	}
	if len(fs.seen) >= fs.limit && found {
		delete(fs.seen, oldest)
	}
}

// checkFence checks the fence of a call request before it is taken: none
// passes; a bad value is refused as a bad request, an old one as fenced,
// each with an error frame that says why. It reports whether the call may
// go on, with its fence.
func (s *ToolServer) checkFence(req *nats.Msg, tool string, creq *wire.CallRequest, start time.Time) (ownership.Fence, bool) {
	v := req.Header.Get(HeaderFence)
	if v == "" {
		return ownership.Fence{}, true
	}
	f, err := ParseFence(v)
	code, outcome := wire.CodeBadRequest, "bad_request"
	if err == nil {
		if err = s.fences.admit(f, start); err == nil {
			return f, true
		}
		code, outcome = wire.CodeFenced, "fenced"
	}
	s.sendError(req.Reply, creq.ID, code, fmt.Sprintf("Tool %s: %v", tool, err))
	s.observe(tool, outcome, time.Since(start))
	return ownership.Fence{}, false
}

// fencedErr is the error of a call whose worker refused it as fenced: its
// text is the worker's, and it matches ErrFenced.
func fencedErr(msg, worker string) error {
	return &fencedError{msg: fmt.Sprintf("%s (worker %s, code %s)", strings.TrimSpace(msg), orUnknown(worker), wire.CodeFenced)}
}

type fencedError struct{ msg string }

func (e *fencedError) Error() string { return e.msg }
func (e *fencedError) Is(target error) bool {
	return target == ErrFenced || errors.Is(ErrFenced, target)
}
