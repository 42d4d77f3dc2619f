package check

import (
	"slices"
	"time"
)

// RunDurations looks at the runs whose first record was stored by one of
// writers at a time in [from, to): took is how long each that ended took
// from its first record to its end, in order; open counts those that have
// no end.
func RunDurations(recs []*Record, writers []string, from, to time.Time) (took []time.Duration, open int) {
	first := map[string]*Record{}
	var order []string
	for _, r := range recs {
		if r.Run == "" {
			continue
		}
		if _, seen := first[r.Run]; !seen {
			first[r.Run] = r
			order = append(order, r.Run)
		}
		f := first[r.Run]
		if r.End && slices.Contains(writers, f.Writer) && !f.Time.Before(from) && f.Time.Before(to) {
			took = append(took, r.Time.Sub(f.Time))
			first[r.Run] = &Record{Run: r.Run} // counted: no writer matches any more
		}
	}
	for _, run := range order {
		f := first[run]
		if f.Writer != "" && slices.Contains(writers, f.Writer) && !f.Time.Before(from) && f.Time.Before(to) {
			open++
		}
	}
	slices.Sort(took)
	return took, open
}
