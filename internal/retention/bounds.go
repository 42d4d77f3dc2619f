package retention

import "time"

// Bounds bound one session's history; a zero field bounds nothing.
// MaxRecords counts the stored records (the retained record of the last
// cut among them), MaxBytes their payloads' bytes (history.Record.Size;
// a cut counts those it keeps, its own retained record's aside: a few
// hundred bytes, and the text of a summary it carries), MaxAge how long
// ago a run's last record was stored.
type Bounds struct {
	MaxRecords int
	MaxBytes   int
	MaxAge     time.Duration
	// Settled keeps every run that ended less than Settled ago, whatever
	// the bounds: its input may be unacknowledged still (an ack lost to a
	// fault is delivered again after the input's ack wait), and a
	// redelivery must find the run, answered, in the history, not run it
	// again. The orchestrator gives four times its input's ack wait; 0
	// keeps none for it.
	Settled time.Duration
}

// None reports whether b bounds nothing.
func (b Bounds) None() bool { return b.MaxRecords <= 0 && b.MaxBytes <= 0 && b.MaxAge <= 0 }

// Over reports whether a history of records records and bytes bytes whose
// oldest record was stored at oldest (zero: unknown) is past one of b's
// bounds at now: whether a cut is worth trying. It is a pure function.
func (b Bounds) Over(records, bytes int, oldest, now time.Time) bool {
	switch {
	case b.MaxRecords > 0 && records > b.MaxRecords:
		return true
	case b.MaxBytes > 0 && bytes > b.MaxBytes:
		return true
	}
	return b.MaxAge > 0 && !oldest.IsZero() && now.Sub(oldest) > b.MaxAge
}
