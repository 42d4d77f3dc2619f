package chaos

import (
	"context"
	"time"
)

// readTries bounds the reads of a stored stream at the end of a run: a
// cluster that just lost and regained a node may leave a stream without a
// leader for a moment (no responders), which is no finding of the run.
const readTries = 10

// retryRead calls read until it succeeds, readTries times at most, a second
// apart.
func retryRead[T any](ctx context.Context, read func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	for try := range readTries {
		if try > 0 {
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return v, err
			case <-t.C:
			}
		}
		if v, err = read(); err == nil {
			return v, nil
		}
	}
	return v, err
}
