package bus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestJSPause holds the pauses between JetStream calls: 100 ms plus an even
// draw below 400 ms, times the failures so far, capped at four times.
func TestJSPause(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		n, u int
		want time.Duration
	}{
		{"first, least", 1, 0, 100 * ms},
		{"first, most", 1, jsPauseSpread - 1, 499 * ms},
		{"second", 2, 0, 200 * ms},
		{"third", 3, 150, 750 * ms},
		{"fourth, most", 4, jsPauseSpread - 1, 1996 * ms},
		{"capped at four", 7, 0, 400 * ms},
		{"capped, most", 7, jsPauseSpread - 1, 1996 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jsPause(tt.n, tt.u); got != tt.want {
				t.Errorf("jsPause(%d, %d) = %v, want %v", tt.n, tt.u, got, tt.want)
			}
		})
	}
}

// TestRetryJS holds what RetryJS returns: an error that cannot pass at
// once and as it is; success after errors that can; and, when ctx ends, the
// last error and ctx's, both found by errors.Is, which the callers rely on.
func TestRetryJS(t *testing.T) {
	errBroken := errors.New("broken")
	t.Run("not retryable", func(t *testing.T) {
		calls := 0
		err := RetryJS(context.Background(), func(context.Context) error {
			calls++
			return errBroken
		})
		if err != errBroken || calls != 1 {
			t.Errorf("RetryJS = %v after %d calls, want broken after 1", err, calls)
		}
	})
	t.Run("passes", func(t *testing.T) {
		calls := 0
		err := RetryJS(context.Background(), func(ctx context.Context) error {
			calls++
			if d, ok := ctx.Deadline(); !ok || time.Until(d) > ensureAttempt {
				t.Errorf("call %d deadline %v, %v; want within %v", calls, d, ok, ensureAttempt)
			}
			if calls < 2 {
				return nats.ErrNoResponders
			}
			return nil
		})
		if err != nil || calls != 2 {
			t.Errorf("RetryJS = %v after %d calls, want nil after 2", err, calls)
		}
	})
	t.Run("ctx ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := 0
		err := RetryJS(ctx, func(context.Context) error {
			calls++
			if calls == 2 {
				cancel()
			}
			return nats.ErrNoResponders
		})
		if !errors.Is(err, nats.ErrNoResponders) || !errors.Is(err, context.Canceled) || calls != 2 {
			t.Errorf("RetryJS = %v after %d calls, want no responders and canceled after 2", err, calls)
		}
		if got, want := err.Error(), nats.ErrNoResponders.Error()+"\n"+context.Canceled.Error(); got != want {
			t.Errorf("RetryJS error %q, want %q", got, want)
		}
	})
}
