package profile

import (
	"fmt"
	"time"
)

// History bounds each session's stored history (package retention): past a
// bound, the oldest whole runs of the session are dropped when a run ends,
// the context policy's summary kept for what it covers. Every field's zero
// value, and the field left out, bounds nothing (the default: a session's
// history is kept whole, as long as the history stream keeps it).
type History struct {
	// MaxRecords bounds the records a session keeps (messages, run ends,
	// summaries and the like), at least 2.
	MaxRecords int `yaml:"max_records" json:"max_records"`
	// MaxBytes bounds the bytes of their payloads.
	MaxBytes int `yaml:"max_bytes" json:"max_bytes"`
	// MaxAge drops runs that ended longer ago than it, as a Go duration
	// ("720h").
	MaxAge string `yaml:"max_age" json:"max_age"`

	maxAge time.Duration
}

// HistoryBounds returns the profile's history bounds: records, payload
// bytes and age, each 0 when unbounded.
func (p *Profile) HistoryBounds() (records, bytes int, age time.Duration) {
	if p.History == nil {
		return 0, 0, 0
	}
	return p.History.MaxRecords, p.History.MaxBytes, p.History.maxAge
}

// checkHistory validates p.History; where names the profile.
func (p *Profile) checkHistory(where string) error {
	h := p.History
	if h == nil {
		return nil
	}
	switch {
	case h.MaxRecords < 0:
		return fmt.Errorf("%s: history: max_records %d is negative", where, h.MaxRecords)
	case h.MaxRecords == 1:
		return fmt.Errorf("%s: history: max_records 1 leaves no room for a run beside the record of the cut: 0 (no bound) or at least 2", where)
	case h.MaxBytes < 0:
		return fmt.Errorf("%s: history: max_bytes %d is negative", where, h.MaxBytes)
	}
	if h.MaxAge != "" {
		d, err := time.ParseDuration(h.MaxAge)
		if err != nil || d < 0 {
			return fmt.Errorf("%s: history: max_age %q is not a duration such as \"720h\" (0 for no bound)", where, h.MaxAge)
		}
		h.maxAge = d
	}
	if bounded := h.MaxRecords > 0 || h.MaxBytes > 0 || h.maxAge > 0; bounded && (p.MaxTokensPerSession > 0 || p.MaxCostPerSession > 0) {
		return fmt.Errorf("%s: history bounds and max_tokens_per_session or max_cost_per_session do not go together: a session's budget counts its stored history, which the bounds drop", where)
	}
	return nil
}
