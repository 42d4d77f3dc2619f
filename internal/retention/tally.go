package retention

import (
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// Tally is how long a session's history was when it was loaded: its
// records (skipped ones included), their payloads' bytes, when its oldest
// record was stored, and how many records a cut left for a purge (Hidden).
type Tally struct {
	Records, Bytes int
	Oldest         time.Time
	Hidden         int
	// Since are the records and bytes the session's writer had stored
	// when the tally was made (history.Writer.Stored), for Due.
	SinceRecords, SinceBytes int
}

// TallyOf returns the tally of a loaded history; zero for nil.
func TallyOf(st *history.Loaded) Tally {
	if st == nil {
		return Tally{}
	}
	t := Tally{Records: len(st.Records) + len(st.Skipped), Hidden: st.Hidden}
	for _, r := range st.Records {
		t.Bytes += r.Size
		if !r.Stored.IsZero() && (t.Oldest.IsZero() || r.Stored.Before(t.Oldest)) {
			t.Oldest = r.Stored
		}
	}
	return t
}

// Due reports whether a session of tally t, whose writer has stored
// records and bytes in all (history.Writer.Stored), is worth a cut at now
// under b: past a bound, or with records a cut left for a purge. It is a
// pure function.
func (t Tally) Due(b Bounds, records, bytes int, now time.Time) bool {
	if b.None() {
		return false
	}
	return t.Hidden > 0 || b.Over(t.Records+records-t.SinceRecords, t.Bytes+bytes-t.SinceBytes, t.Oldest, now)
}
