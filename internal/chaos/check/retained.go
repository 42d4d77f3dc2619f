package check

import (
	"slices"
	"time"

	"github.com/agentfleet/agentfleet"
)

// ClassOverBound: with retention, a session's kept history holds more
// records than its bound allows: more than max_records before its last
// run (a cut missed at a crash is made good by the next run's end, so the
// last run may be over).
const ClassOverBound Class = "over_bound"

// Visible returns the records a load of each session sees: those stored
// from the Cut of its last retained record on, the retained records left
// out, in order. Without retained records it returns recs.
func Visible(recs []*Record) []*Record {
	cut := map[string]uint64{}
	last := map[string]uint64{}
	for _, r := range recs {
		if r.Cut > 0 && r.Seq >= last[r.Session] {
			last[r.Session], cut[r.Session] = r.Seq, r.Cut
		}
	}
	if len(cut) == 0 {
		return recs
	}
	return slices.DeleteFunc(slices.Clone(recs), func(r *Record) bool { return r.Cut > 0 || r.Seq < cut[r.Session] })
}

// Kept returns the plan as retention leaves it to be checked: each
// session's messages from the first one the visible records hold, in
// publish order (those before were dropped whole with their runs, or, for
// a session with no visible user record, none), and how many messages
// were left out. What was dropped cannot be told from what was lost; the
// ledger's checks still see their tool calls.
func Kept(p *Plan, visible []*Record) (*Plan, int) {
	seen := map[string]bool{} // session/id
	for _, r := range visible {
		if u, ok := r.Msg.(*agentfleet.UserMessage); ok {
			seen[r.Session+"/"+u.ID] = true
		}
	}
	out := &Plan{}
	dropped := 0
	for _, s := range p.Sessions {
		first := slices.IndexFunc(s.Messages, func(m *Message) bool { return seen[s.Name+"/"+m.ID] })
		if first < 0 {
			first = 0
		}
		dropped += first
		out.Sessions = append(out.Sessions, &SessionPlan{Name: s.Name, Start: s.Start, Messages: s.Messages[first:]})
	}
	return out, dropped
}

// VerifyBound adds a ClassOverBound violation for each session whose
// visible records of runs settled at its last run's end (ended more than
// settled before it, retention.Bounds.Settled, with a second for the
// clocks) number more than maxRecords: the cut at that end keeps the
// younger runs whatever the bound. The last two runs are not counted: the
// cut at the last run's end may have been lost to a crash (the next run's
// end makes it good), which leaves the run before it over the bound.
func (f *Findings) VerifyBound(visible []*Record, maxRecords int, settled time.Duration) {
	bySession := map[string][]*Record{}
	var names []string
	for _, r := range visible {
		if bySession[r.Session] == nil {
			names = append(names, r.Session)
		}
		bySession[r.Session] = append(bySession[r.Session], r)
	}
	for _, name := range names {
		recs := bySession[name]
		lastRun, prevRun := recs[len(recs)-1].Run, ""
		for i := len(recs) - 1; i >= 0 && prevRun == ""; i-- {
			if recs[i].Run != lastRun {
				prevRun = recs[i].Run
			}
		}
		ended := map[string]time.Time{}
		var last time.Time
		for _, r := range recs {
			ended[r.Run] = later(ended[r.Run], r.Time)
			last = later(last, r.Time)
		}
		before := 0
		for _, r := range recs {
			if r.Run != lastRun && r.Run != prevRun && ended[r.Run].Before(last.Add(-settled-time.Second)) {
				before++
			}
		}
		if before > maxRecords {
			f.add(ClassOverBound, "session %s: %d settled records kept before its last two runs (the last %s), the bound is %d", name, before, Short(lastRun), maxRecords)
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
