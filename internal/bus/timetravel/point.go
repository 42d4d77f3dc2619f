package timetravel

import (
	"fmt"

	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// Point is where a fork cuts a session's history: after stored message
// AtSeq (every record of it included), or before the first record of run
// BeforeRun. The zero Point copies the whole history.
type Point struct {
	AtSeq     uint64 `json:"at,omitempty"`
	BeforeRun string `json:"before_run,omitempty"`
}

// Cut returns how many of recs (a session's records, in order) a fork at
// p copies. The error says what is wrong with p: both ways given, a
// sequence that is not one of the session's stored messages, a run the
// session does not hold.
func Cut(recs []history.Record, p Point) (int, error) {
	switch {
	case p.AtSeq != 0 && p.BeforeRun != "":
		return 0, fmt.Errorf("give the point as a sequence (at) or as a run (before_run), not both")
	case p.BeforeRun != "":
		for i, r := range recs {
			if r.RunID == p.BeforeRun {
				return i, nil
			}
		}
		return 0, fmt.Errorf("the session has no run %q", p.BeforeRun)
	case p.AtSeq != 0:
		n, found := 0, false
		for i, r := range recs {
			if r.Seq == p.AtSeq {
				found = true
			}
			if r.Seq <= p.AtSeq {
				n = i + 1
			}
		}
		if !found {
			return 0, fmt.Errorf("the session has no stored message %d (agentctl history lists them)", p.AtSeq)
		}
		return n, nil
	}
	return len(recs), nil
}
