package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/google/uuid"
)

// Result is what Apply did: the decision, the history as it was loaded
// (before the cut), whether the retained record of the cut was stored
// (Stored: the session's history in memory is then longer than its stored
// one, and must be loaded again), and whether the stream was purged.
type Result struct {
	Decision Decision
	Loaded   *history.Loaded
	Stored   bool
	Purged   bool
}

// Apply cuts the history of session of agent to b at now, as its owner:
// it loads the stored history, decides (Cut) against what w, the owner's
// writer, last wrote, stores the Retained record through w (so only the
// owner, with a view of the session's last record, stores a cut: anyone
// else's append fences it, and it stores nothing), and then purges the
// stream below the cut. A purge removes only what a stored retained
// record already drops from every load; one that failed, or one left
// over from an owner that died before it, is made by the next Apply.
// The caller must keep the session from writing meanwhile, and drop from
// memory what a stored cut dropped (Result.Stored: Decision.Runs and the
// summary of Decision.Retained), as the loop does (loop.Trimmer).
func Apply(ctx context.Context, store *history.Store, w *history.Writer, agent, session string, b Bounds, now time.Time) (Result, error) {
	if w.Buffered() > 0 {
		return Result{Decision: Decision{Why: WhyStale}}, nil
	}
	st, err := store.Load(ctx, agent, session)
	if err != nil {
		return Result{}, err
	}
	res := Result{Loaded: st}
	if st.LastSeq != w.Last() {
		res.Decision = Decision{Why: WhyStale}
		return res, nil
	}
	res.Decision = Cut(st.Records, st.LastSeq, b, now)
	below := st.RetainedFrom
	if st.Hidden == 0 {
		below = 0 // nothing left over to purge
	}
	if k := res.Decision.Keep; k > 0 {
		ret := res.Decision.Retained
		if _, err := w.AppendRetained(ctx, "retain-"+uuid.NewString(), &ret); err != nil {
			return res, fmt.Errorf("retention: session %s: %w", session, err)
		}
		res.Stored, below = true, k
	}
	if below > 0 {
		if err := store.Purge(ctx, agent, session, below); err != nil {
			res.Decision.Kept.Hidden = max(st.Hidden+res.Decision.Retained.Records, 1)
			return res, err
		}
		res.Purged = true
	}
	return res, nil
}
