package check

import "github.com/agentfleet/agentfleet"

// StoredRun is one run as the history holds it: its session, the ids of
// the user messages it took, in order, and its stop reason, empty when no
// end is stored.
type StoredRun struct {
	Session    string
	Inputs     []string
	StopReason agentfleet.StopReason
}

// StoredRuns indexes the history by run id.
func StoredRuns(recs []*Record) map[string]*StoredRun {
	runs := map[string]*StoredRun{}
	for _, r := range recs {
		if r.Run == "" {
			continue
		}
		sr := runs[r.Run]
		if sr == nil {
			sr = &StoredRun{Session: r.Session}
			runs[r.Run] = sr
		}
		switch {
		case r.End && r.Final != nil:
			sr.StopReason = r.Final.StopReason
		case r.Msg != nil:
			if u, ok := r.Msg.(*agentfleet.UserMessage); ok {
				sr.Inputs = append(sr.Inputs, u.ID)
			}
		}
	}
	return runs
}
