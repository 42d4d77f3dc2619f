package pipeline

import "encoding/json"

// DefaultMaxProgressBytes is the default bound of the tool.update events of
// one call (Config.MaxProgressBytes).
const DefaultMaxProgressBytes = 8 << 20

// updateOverhead is what a tool.update event costs besides its partial
// result and the call's arguments: its type, ids, names and time.
const updateOverhead = 256

// ProgressDroppedKey is the key of the partial result of the one
// tool.update that tells, as its call ends, how many were dropped:
// {"progress_dropped": {"updates": n, "limit_bytes": limit}}.
const ProgressDroppedKey = "progress_dropped"

// progressBound is what the tool.update events of one call have spent of
// their bound, and what was dropped past it.
type progressBound struct {
	limit   int64
	used    int64
	dropped int
}

// take charges an update of size bytes and reports whether it goes out:
// the updates of a call go out while their sizes add up to at most the
// limit; once one does not fit, none after it does either, so that a
// call's updates are a prefix of what it sent.
func (b *progressBound) take(size int64) bool {
	if b.dropped > 0 || size < 0 || size > b.limit-b.used {
		b.dropped++
		return false
	}
	b.used += size
	return true
}

// droppedNotice is the partial result that tells how many updates were
// dropped, nil when none was.
func (b *progressBound) droppedNotice() map[string]any {
	if b.dropped == 0 {
		return nil
	}
	return map[string]any{ProgressDroppedKey: map[string]any{"updates": b.dropped, "limit_bytes": b.limit}}
}

// updateSize estimates the bytes of a tool.update event: the JSON of its
// partial result and of the call's arguments (argsSize), and the rest.
func updateSize(partial any, argsSize int64) int64 {
	b, err := json.Marshal(partial)
	if err != nil {
		return updateOverhead + argsSize
	}
	return int64(len(b)) + argsSize + updateOverhead
}

// jsonSize is the length of v's JSON, 0 when it has none.
func jsonSize(v any) int64 {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return int64(len(b))
}
