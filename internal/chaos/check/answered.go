package check

import "github.com/agentfleet/agentfleet"

// Answered reports whether every message of the plan has a stored user
// record whose run has ended, and how many do not.
func Answered(p *Plan, recs []*Record) (bool, int) {
	runOf := map[string]string{} // session/id -> run
	ended := map[string]bool{}   // session/run
	for _, r := range recs {
		if r.End {
			ended[r.Session+"/"+r.Run] = true
		} else if u, ok := r.Msg.(*agentfleet.UserMessage); ok {
			if _, seen := runOf[r.Session+"/"+u.ID]; !seen {
				runOf[r.Session+"/"+u.ID] = r.Run
			}
		}
	}
	missing := 0
	for _, s := range p.Sessions {
		for _, m := range s.Messages {
			run, ok := runOf[s.Name+"/"+m.ID]
			if !ok || !ended[s.Name+"/"+run] {
				missing++
			}
		}
	}
	return missing == 0, missing
}
