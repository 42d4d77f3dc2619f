package slots

// MaxClaim bounds the slots a worker's declared limit counts for in
// Choose, whatever it declares: a worker that claims a million slots
// attracts at most this many of one caller's calls before the caller's
// count of its own calls on it says it is full.
const MaxClaim = 1024

// Worker is what a caller knows of one worker when it chooses where a call
// goes.
type Worker struct {
	// ID is the worker's instance id.
	ID string
	// Limit is the concurrency the worker declares; 0 or less: unknown,
	// and the worker is never chosen.
	Limit int
	// Ceiling, when positive, is a lower limit the worker's refusals
	// taught: the calls it held when it last refused one.
	Ceiling int
	// Mine is this caller's calls in flight on the worker.
	Mine int
	// Others is the calls of other callers on it, as its last refusal
	// said, less one for each call of this caller that ended there since.
	Others int
}

// Free returns the slots of w that Choose counts as free: its declared
// limit, bounded by MaxClaim and by its Ceiling, less the calls known to
// be on it. It may be negative.
func (w Worker) Free() int {
	limit := min(w.Limit, MaxClaim)
	if w.Ceiling > 0 {
		limit = min(limit, w.Ceiling)
	}
	return limit - w.Mine - max(w.Others, 0)
}

// Choose returns the index in ws of the worker with the most free slots,
// or -1 when none has a free slot (the call then goes to the queue group,
// which reaches workers this caller does not know of too). Between workers
// with as many free slots, r (a random number) chooses, so that callers
// that know the same do not all pick the same worker.
func Choose(ws []Worker, r uint32) int {
	best, ties := 0, 0
	for _, w := range ws {
		switch f := w.Free(); {
		case f > best:
			best, ties = f, 1
		case f == best && f > 0:
			ties++
		}
	}
	if ties == 0 {
		return -1
	}
	n := int(r % uint32(ties))
	for i, w := range ws {
		if w.Free() == best {
			if n == 0 {
				return i
			}
			n--
		}
	}
	return -1 // not reached
}
