package fleetexec_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// TestErr checks that each error of the tool client reads as before and
// matches the pipeline's sentinel of its kind, and no other, so that the
// pipeline reports the same outcome.
func TestErr(t *testing.T) {
	result := agentfleet.ErrorResult("boom: disk full")
	sentinels := []error{pipeline.ErrTimeout, pipeline.ErrWorkerLost, pipeline.ErrNoResponders}
	for _, tc := range []struct {
		name  string
		err   error
		kinds []error // the pipeline's sentinels it must match
		also  error   // another error it must still match
	}{
		{"timeout", fmt.Errorf("Tool t: %w after 1s on worker w/1", toolrpc.ErrTimeout), []error{pipeline.ErrTimeout}, toolrpc.ErrTimeout},
		{"worker lost", fmt.Errorf("Tool t: %w: no worker took the call within 5s", toolrpc.ErrWorkerLost), []error{pipeline.ErrWorkerLost}, toolrpc.ErrWorkerLost},
		{"worker lost, retries spent", fmt.Errorf("%w (after 3 attempts)", fmt.Errorf("Tool t: %w: worker w/1 sent nothing", toolrpc.ErrWorkerLost)), []error{pipeline.ErrWorkerLost}, toolrpc.ErrWorkerLost},
		{"no responders", fmt.Errorf("Tool t: %w (no worker is subscribed to agent.tool.t)", toolrpc.ErrNoResponders), []error{pipeline.ErrNoResponders}, toolrpc.ErrNoResponders},
		// A call that waited for a worker until its timeout is both.
		{"no responders until the timeout", fmt.Errorf("Tool t: %w; waited 1s for a worker, until %w", toolrpc.ErrNoResponders, fmt.Errorf("Tool t: %w after 1s ; the call never ran", toolrpc.ErrTimeout)), []error{pipeline.ErrTimeout, pipeline.ErrNoResponders}, toolrpc.ErrNoResponders},
		{"aborted", context.Canceled, nil, context.Canceled},
		{"worker's error frame", errors.New("tool panicked (worker w/1, code internal)"), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fleetexec.Err(tc.err)
			if got.Error() != tc.err.Error() {
				t.Errorf("text = %q, want %q", got.Error(), tc.err.Error())
			}
			for _, s := range sentinels {
				if is, want := errors.Is(got, s), slices.Contains(tc.kinds, s); is != want {
					t.Errorf("errors.Is(err, pipeline %q) = %v, want %v", s, is, want)
				}
			}
			if tc.also != nil && !errors.Is(got, tc.also) {
				t.Errorf("errors.Is(err, %q) = false, want true", tc.also)
			}
		})
	}
	t.Run("error result", func(t *testing.T) {
		got := fleetexec.Err(&toolrpc.ResultError{Result: result})
		re, ok := errors.AsType[*pipeline.ResultError](got)
		if !ok || re.Result != result {
			t.Fatalf("Err = %#v, want a *pipeline.ResultError carrying the result", got)
		}
		if got, want := got.Error(), "boom: disk full"; got != want {
			t.Errorf("text = %q, want %q", got, want)
		}
	})
	if err := fleetexec.Err(nil); err != nil {
		t.Errorf("Err(nil) = %v", err)
	}
}
