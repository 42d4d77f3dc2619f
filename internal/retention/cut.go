package retention

import (
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// Why Cut drops nothing, or drops less than the bounds ask.
const (
	WhyWithin = "within bounds"
	// WhyStale: the records do not end where the owner's writer last
	// wrote (someone else wrote, or a record waits in its buffer).
	WhyStale = "stale view"
	// WhyActive: what the bounds ask would drop part of the run that goes
	// on, of one that did not end, of the last run, or of one that ended
	// less than Bounds.Settled ago.
	WhyActive = "only the last, an unended, the active or a run ended too lately to be settled is left to drop"
)

// Decision is what Cut decided: nothing (Keep 0, Why says why), or to keep
// the records from stream sequence Keep on, writing Retained first. Met
// reports whether what is kept is within the bounds; when not, Why says
// what stopped the cut.
type Decision struct {
	Keep     uint64
	Retained history.Retained
	Met      bool
	Why      string
	// Runs names the runs dropped (nil when none).
	Runs map[string]bool
	// Kept is the tally of what is kept, the retained record counted
	// (what is there, when nothing is dropped).
	Kept Tally
}

// run is one run of the records: consecutive records of one run id.
type run struct {
	first, end int // records[first:end]
	bytes      int
	newest     time.Time
	ended      bool // holds its end record
	messages   int
}

// Cut decides which of a session's oldest runs to drop so that what is
// kept is within b at now. records are the session's records as Load
// returns them (a retained record's cut applied), last the stream
// sequence of the last record the owner's writer knows. It is a pure
// function. It drops whole runs only, from the oldest, never one that has
// not ended (the active run, or one to resume), never the last run that
// holds messages, and cuts only where a stored message begins (an envelope
// is purged whole or not at all). Runs of bookkeeping records only (a
// fork's forked record, an earlier cut's retained record) drop as ended
// ones do.
//
// The records dropped keep their meaning in the Retained record: the
// summary in force, its Covers counted anew from the first message kept
// (when it covered every dropped message, the model is sent the same
// summary and the same messages after the cut: the dropped messages were
// the summary's already; when the cut went past it, Covers is 0 and the
// summary is sent before the messages kept, the messages it did not cover
// lost); the last handoff, when none is kept; the forked record, when the
// cut dropped it.
func Cut(records []history.Record, last uint64, b Bounds, now time.Time) Decision {
	if len(records) == 0 || b.None() {
		return Decision{Met: true, Why: WhyWithin}
	}
	if records[len(records)-1].Seq != last {
		return Decision{Why: WhyStale}
	}
	runs := runsOf(records)
	limit := droppable(runs, b.Settled, now)
	total, totalBytes := len(records), 0
	for _, r := range runs {
		totalBytes += r.bytes
	}
	// within reports whether keeping runs[k:] (and a retained record,
	// when k > 0) is within b.
	dropped, droppedBytes := make([]int, len(runs)+1), make([]int, len(runs)+1)
	for i, r := range runs {
		dropped[i+1] = dropped[i] + (r.end - r.first)
		droppedBytes[i+1] = droppedBytes[i] + r.bytes
	}
	within := func(k int) bool {
		n := total - dropped[k]
		if k > 0 {
			n++
		}
		switch {
		case b.MaxRecords > 0 && n > b.MaxRecords:
			return false
		case b.MaxBytes > 0 && totalBytes-droppedBytes[k] > b.MaxBytes:
			return false
		case b.MaxAge > 0 && k < len(runs) && !runs[k].newest.IsZero() && now.Sub(runs[k].newest) > b.MaxAge:
			return false
		}
		return true
	}
	kept := func(k int) Tally {
		t := Tally{Records: total - dropped[k], Bytes: totalBytes - droppedBytes[k]}
		if k > 0 {
			t.Records++
		}
		for _, r := range records[runs[k].first:] {
			if !r.Stored.IsZero() && (t.Oldest.IsZero() || r.Stored.Before(t.Oldest)) {
				t.Oldest = r.Stored
			}
		}
		return t
	}
	if within(0) {
		return Decision{Met: true, Why: WhyWithin, Kept: kept(0)}
	}
	k := 0
	for c := 1; c <= limit; c++ {
		if records[runs[c].first].Index != 0 {
			continue // the run begins inside an envelope
		}
		k = c
		if within(c) {
			break
		}
	}
	if k == 0 {
		return Decision{Why: WhyActive, Kept: kept(0)}
	}
	d := Decision{Keep: records[runs[k].first].Seq, Met: within(k), Kept: kept(k), Runs: map[string]bool{}}
	if !d.Met {
		d.Why = WhyActive
	}
	cut := runs[k].first
	d.Retained = history.Retained{FirstSeq: d.Keep, Runs: k, Records: cut, Bytes: droppedBytes[k]}
	messages := 0
	for _, r := range runs[:k] {
		messages += r.messages
		d.Runs[records[r.first].RunID] = true
	}
	if sum := summaryInForce(records); sum != nil {
		d.Retained.Summary = &agentfleet.ContextSummary{Covers: max(sum.Covers-messages, 0), Text: sum.Text}
	}
	if at, h := lastHandoff(records); at >= 0 && at < cut {
		d.Retained.Handoff = h
	}
	if at, f := lastForked(records); at >= 0 && at < cut {
		d.Retained.Forked = f
	}
	return d
}

// runsOf groups records into runs.
func runsOf(records []history.Record) []run {
	var runs []run
	for i, r := range records {
		if i == 0 || r.RunID != records[i-1].RunID {
			runs = append(runs, run{first: i})
		}
		cur := &runs[len(runs)-1]
		cur.end = i + 1
		cur.bytes += r.Size
		if r.Stored.After(cur.newest) {
			cur.newest = r.Stored
		}
		if r.Final != nil {
			cur.ended = true
		}
		if r.Message != nil {
			cur.messages++
		}
	}
	return runs
}

// droppable returns how many of the oldest runs may be dropped: up to the
// first that holds messages and has not ended, and before the last run
// that holds messages (and the last run of all).
func droppable(runs []run, settled time.Duration, now time.Time) int {
	lastMsg := -1
	for i, r := range runs {
		if r.messages > 0 {
			lastMsg = i
		}
	}
	n := 0
	for i, r := range runs {
		if i == len(runs)-1 || i >= lastMsg || (r.messages > 0 && !r.ended) {
			break
		}
		if settled > 0 && !r.newest.IsZero() && now.Sub(r.newest) < settled {
			break
		}
		n++
	}
	return n
}

// summaryInForce is the summary the session's loop would use, as the
// orchestrator restores it: the last summary record's, or the last
// retained record's, whichever is later (a retained record without one
// ends the summary before it).
func summaryInForce(records []history.Record) *agentfleet.ContextSummary {
	var sum *agentfleet.ContextSummary
	for _, r := range records {
		switch {
		case r.Summary != nil:
			sum = r.Summary
		case r.Retained != nil:
			sum = r.Retained.Summary
		}
	}
	return sum
}

// lastHandoff returns the last handoff of records, and its place (-1 when
// none).
func lastHandoff(records []history.Record) (int, *history.Handoff) {
	for i := len(records) - 1; i >= 0; i-- {
		r := records[i]
		if r.Handoff != nil {
			return i, r.Handoff
		}
		if r.Retained != nil && r.Retained.Handoff != nil {
			return i, r.Retained.Handoff
		}
	}
	return -1, nil
}

// lastForked returns the last forked record of records, or the one a
// retained record carries, and its place (-1 when none).
func lastForked(records []history.Record) (int, *history.Forked) {
	for i := len(records) - 1; i >= 0; i-- {
		r := records[i]
		if r.Forked != nil {
			return i, r.Forked
		}
		if r.Retained != nil && r.Retained.Forked != nil {
			return i, r.Retained.Forked
		}
	}
	return -1, nil
}
