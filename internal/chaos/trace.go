package chaos

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/agentfleet/agentfleet"
)

// Every message of the load carries a W3C traceparent derived from its id,
// so that a run traced by an orchestrator (Config.TraceEndpoint) can be
// matched with the message it took, whichever orchestrator took it.

// TraceContextOf returns the trace id and the span id, in hex, of the
// traceparent that the load sends message id with (sampled).
func TraceContextOf(id string) (traceID, spanID string) {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:16]), hex.EncodeToString(h[16:24])
}

func traceparentOf(id string) string {
	t, s := TraceContextOf(id)
	return "00-" + t + "-" + s + "-01"
}

// StoredRun is one run as the history holds it: its session, the ids of
// the user messages it took, in order, and its stop reason, empty when no
// end is stored.
type StoredRun struct {
	Session    string
	Inputs     []string
	StopReason agentfleet.StopReason
}

// storedRuns indexes the history by run id.
func storedRuns(recs []*record) map[string]*StoredRun {
	runs := map[string]*StoredRun{}
	for _, r := range recs {
		if r.run == "" {
			continue
		}
		sr := runs[r.run]
		if sr == nil {
			sr = &StoredRun{Session: r.session}
			runs[r.run] = sr
		}
		switch {
		case r.end && r.final != nil:
			sr.StopReason = r.final.StopReason
		case r.msg != nil:
			if u, ok := r.msg.(*agentfleet.UserMessage); ok {
				sr.Inputs = append(sr.Inputs, u.ID)
			}
		}
	}
	return runs
}
