package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

func TestSleep(t *testing.T) {
	tests := []struct {
		name string
		ms   any
		want string
	}{
		{"zero", float64(0), "slept 0 ms"},
		{"float64", float64(20), "slept 20 ms"},
		{"int64", int64(5), "slept 5 ms"},
		{"uint16", uint16(3), "slept 3 ms"},
		{"json.Number", json.Number("4"), "slept 4 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var partials []any
			start := time.Now()
			res, err := Sleep(time.Millisecond).Handler.Call(context.Background(), &agentfleet.Call{
				Name:      "sleep",
				Arguments: map[string]any{"ms": tt.ms},
				Progress:  func(p any) { partials = append(partials, p) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := text(res), tt.want; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
			ms := res.Details["slept_ms"].(int64)
			if elapsed := time.Since(start); elapsed < time.Duration(ms)*time.Millisecond {
				t.Errorf("returned after %v, want at least %d ms", elapsed, ms)
			}
			for _, p := range partials {
				m := p.(map[string]any)
				if got, want := m["total_ms"], any(ms); got != want {
					t.Errorf("partial total_ms = %v, want %v", got, want)
				}
				if e := m["elapsed_ms"].(int64); e < 0 || e > ms {
					t.Errorf("partial elapsed_ms = %d, want within [0, %d]", e, ms)
				}
			}
		})
	}
}

func TestSleepErrors(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing", map[string]any{}, `sleep: missing required argument "ms"`},
		{"negative", map[string]any{"ms": -1.0}, `sleep: argument "ms" must be between 0 and 600000, got -1`},
		{"too long", map[string]any{"ms": int64(600001)}, `sleep: argument "ms" must be between 0 and 600000, got 600001`},
		{"fraction", map[string]any{"ms": 2.5}, `sleep: argument "ms" must be an integer, got 2.5`},
		{"string", map[string]any{"ms": "100"}, `sleep: argument "ms" must be an integer, got a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(context.Background(), t, Sleep(0), tt.args)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestSleepProgressAndCancel waits for a progress report from a ten-minute
// sleep, cancels it, and expects it to end at once.
func TestSleepProgressAndCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := make(chan map[string]any, 1)
	type outcome struct {
		res *agentfleet.ToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Sleep(time.Millisecond).Handler.Call(ctx, &agentfleet.Call{
			Name:      "sleep",
			Arguments: map[string]any{"ms": float64(MaxSleepMS)},
			Progress: func(p any) {
				select {
				case progress <- p.(map[string]any):
				default:
				}
			},
		})
		done <- outcome{res, err}
	}()

	select {
	case p := <-progress:
		if got, want := p["total_ms"], any(int64(MaxSleepMS)); got != want {
			t.Errorf("progress total_ms = %v, want %v", got, want)
		}
		if _, ok := p["elapsed_ms"].(int64); !ok {
			t.Errorf("progress elapsed_ms = %#v, want an int64", p["elapsed_ms"])
		}
	case o := <-done:
		t.Fatalf("sleep returned before any progress: %v, %v", o.res, o.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no progress report within 10 s")
	}

	cancel()
	select {
	case o := <-done:
		if !errors.Is(o.err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", o.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sleep did not return within 10 s of cancellation")
	}
}

func TestSleepAlreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run(ctx, t, Sleep(0), map[string]any{"ms": 0.0}); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}
