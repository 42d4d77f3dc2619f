package chaos

import (
	"context"
	"time"

	"github.com/agentfleet/agentfleet/internal/retry"
)

// readRetry bounds the reads of a stored stream at the end of a run: a
// cluster that just lost and regained a node may leave a stream without a
// leader for a moment (no responders), which is no finding of the run. Ten
// reads at most, a second apart.
var readRetry = retry.Policy{Base: time.Second, Multiplier: 1, Jitter: retry.NoJitter, MaxAttempts: 10}

// retryRead calls read until it succeeds, as readRetry allows.
func retryRead[T any](ctx context.Context, read func() (T, error)) (T, error) {
	var v T
	err := retry.Do(ctx, readRetry, func(context.Context, int) error {
		var err error
		v, err = read()
		return err
	})
	return v, err
}
