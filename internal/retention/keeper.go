package retention

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// Keeper keeps one session's history within its bounds for the session's
// owner: it knows how long the history is (its Tally, from the load and
// from what the session's writer stored since), and cuts it (Apply) when
// a run ended past a bound. It is safe for concurrent use; the caller
// calls After while no record of the session is written.
type Keeper struct {
	store          *history.Store
	agent, session string
	bounds         Bounds
	log            *slog.Logger

	mu    sync.Mutex
	tally Tally
}

// NewKeeper returns the keeper of session of agent under b, whose history
// loaded as st, telling log of its cuts; nil when b bounds nothing.
func NewKeeper(store *history.Store, agent, session string, b Bounds, st *history.Loaded, log *slog.Logger) *Keeper {
	if b.None() {
		return nil
	}
	return &Keeper{store: store, agent: agent, session: session, bounds: b, tally: TallyOf(st), log: log}
}

// afterTimeout bounds one cut (After).
const afterTimeout = 10 * time.Second

// After cuts the history to the bounds, if it is past one, once a run's
// end is stored by w, the owner's writer; Result.Stored says a cut was
// stored, and what the session must drop from memory (Decision.Runs and
// the summary of Decision.Retained). An error with a Stored result is a
// purge that failed (the next cut makes it); one without is Apply's
// (history.ErrFenced among them).
func (k *Keeper) After(ctx context.Context, w *history.Writer, now time.Time) (Result, error) {
	if k == nil || k.bounds.None() || w == nil {
		return Result{}, nil
	}
	n, by := w.Stored()
	k.mu.Lock()
	if k.tally.Oldest.IsZero() && n > k.tally.SinceRecords {
		k.tally.Oldest = now // the first record since a load of none
	}
	due := k.tally.Due(k.bounds, n, by, now)
	k.mu.Unlock()
	if !due {
		return Result{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, afterTimeout)
	defer cancel()
	res, err := Apply(ctx, k.store, w, k.agent, k.session, k.bounds, now)
	if res.Loaded != nil {
		t := res.Decision.Kept
		t.SinceRecords, t.SinceBytes = w.Stored()
		k.mu.Lock()
		k.tally = t
		k.mu.Unlock()
	}
	if err != nil {
		k.log.Warn("session history not cut to its bounds", "agent", k.agent, "session", k.session, "err", err)
	}
	if d := res.Decision; res.Stored {
		k.log.Info("session history cut to its bounds", "agent", k.agent, "session", k.session,
			"runs", d.Retained.Runs, "records", d.Retained.Records, "first_seq", d.Keep, "within", d.Met, "purged", res.Purged)
	}
	return res, err
}
