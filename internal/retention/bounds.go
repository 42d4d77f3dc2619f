package retention

import (
	"fmt"
	"time"
)

// Bounds bound one session's history; a zero field bounds nothing.
// MaxRecords counts the stored records (the retained record of the last
// cut among them), MaxBytes their payloads' bytes (history.Record.Size),
// MaxAge how long ago a run's last record was stored.
type Bounds struct {
	MaxRecords int
	MaxBytes   int
	MaxAge     time.Duration
}

// None reports whether b bounds nothing.
func (b Bounds) None() bool { return b.MaxRecords <= 0 && b.MaxBytes <= 0 && b.MaxAge <= 0 }

// Check returns an error naming the first field that is negative.
func (b Bounds) Check() error {
	switch {
	case b.MaxRecords < 0:
		return fmt.Errorf("max_records %d is negative", b.MaxRecords)
	case b.MaxBytes < 0:
		return fmt.Errorf("max_bytes %d is negative", b.MaxBytes)
	case b.MaxAge < 0:
		return fmt.Errorf("max_age %s is negative", b.MaxAge)
	case b.MaxRecords == 1:
		return fmt.Errorf("max_records 1 leaves no room for a run beside the retained record: use 0 (no bound) or at least 2")
	}
	return nil
}

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
