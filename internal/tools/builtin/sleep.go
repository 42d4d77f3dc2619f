package builtin

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet"
)

// MaxSleepMS is the longest sleep, in milliseconds, that the sleep tool
// accepts: ten minutes.
const MaxSleepMS = 600_000

// DefaultSleepTick is the default interval between the sleep tool's progress
// reports.
const DefaultSleepTick = 100 * time.Millisecond

var sleepSchema = mustSchema(`{
	"type": "object",
	"properties": {
		"ms": {
			"type": "integer",
			"description": "How long to sleep, in milliseconds",
			"minimum": 0,
			"maximum": 600000
		}
	},
	"required": ["ms"],
	"additionalProperties": false
}`)

// Sleep returns the sleep tool, which waits {"ms": integer} milliseconds
// (0 to MaxSleepMS) and answers "slept 250 ms", with details {"slept_ms": n}.
//
// While it waits it reports progress through call.Progress every tick (every
// DefaultSleepTick when tick <= 0) with a map {"elapsed_ms": n, "total_ms":
// ms}. Cancelling the context ends the wait at once with an error wrapping
// the context's error.
//
// The tool's TimeoutMS is a little above MaxSleepMS, so that a system-wide
// default timeout does not cut a long sleep short.
func Sleep(tick time.Duration) *agentfleet.Tool {
	if tick <= 0 {
		tick = DefaultSleepTick
	}
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        "sleep",
			Label:       "Sleep",
			Description: "Waits the given number of milliseconds (at most 600000), reporting progress, then returns. Useful for testing timeouts and cancellation.",
			InputSchema: sleepSchema,
			Annotations: agentfleet.Annotations{Idempotent: true},
			Parallel:    true,
			TimeoutMS:   MaxSleepMS + 5_000,
		},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			ms, err := intArg("sleep", call.Arguments, "ms", true, 0, 0, MaxSleepMS)
			if err != nil {
				return nil, err
			}
			if err := sleep(ctx, time.Duration(ms)*time.Millisecond, tick, call.Progress); err != nil {
				return nil, err
			}
			res := agentfleet.TextResult(fmt.Sprintf("slept %d ms", ms))
			res.Details = map[string]any{"slept_ms": ms}
			return res, nil
		}),
	}
}

// sleep waits total, calling progress (if not nil) every tick, and returns
// early with an error when ctx is done.
func sleep(ctx context.Context, total, tick time.Duration, progress func(any)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sleep: %w", err)
	}
	if total <= 0 {
		return nil
	}
	start := time.Now()
	timer := time.NewTimer(total)
	defer timer.Stop()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("sleep: interrupted after %d of %d ms: %w",
				min(time.Since(start), total).Milliseconds(), total.Milliseconds(), ctx.Err())
		case <-timer.C:
			return nil
		case <-ticker.C:
			if progress != nil {
				progress(map[string]any{
					"elapsed_ms": min(time.Since(start), total).Milliseconds(),
					"total_ms":   total.Milliseconds(),
				})
			}
		}
	}
}
