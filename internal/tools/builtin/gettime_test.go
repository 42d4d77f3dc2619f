package builtin

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestGetTime(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 30, 11, 15, 0, 0, time.UTC) }
	tests := []struct {
		timezone string
		want     string
	}{
		{"Asia/Tokyo", "2026-11-30T20:15:00+09:00 (Asia/Tokyo)"},
		{"UTC", "2026-11-30T11:15:00Z (UTC)"},
		{"America/New_York", "2026-11-30T06:15:00-05:00 (America/New_York)"},
		{"Asia/Kolkata", "2026-11-30T16:45:00+05:30 (Asia/Kolkata)"},
	}
	for _, tt := range tests {
		t.Run(tt.timezone, func(t *testing.T) {
			res, err := run(context.Background(), t, GetTime(now), map[string]any{"timezone": tt.timezone})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := text(res), tt.want; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
			if got, want := res.Details["timezone"], any(tt.timezone); got != want {
				t.Errorf("details timezone = %v, want %v", got, want)
			}
			if got, want := res.Details["unix"], any(now().Unix()); got != want {
				t.Errorf("details unix = %v, want %v", got, want)
			}
		})
	}
}

func TestGetTimeErrors(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown zone", map[string]any{"timezone": "Mars/Base"}, `get_time: unknown time zone "Mars/Base"`},
		{"path", map[string]any{"timezone": "../../etc/passwd"}, `get_time: unknown time zone "../../etc/passwd"`},
		{"absolute path", map[string]any{"timezone": "/etc/localtime"}, `get_time: unknown time zone "/etc/localtime"`},
		{"local", map[string]any{"timezone": "Local"}, `get_time: unknown time zone "Local"`},
		{"empty", map[string]any{"timezone": ""}, `get_time: argument "timezone" is empty; give an IANA time zone name such as "UTC"`},
		{"missing", map[string]any{}, `get_time: missing required argument "timezone"`},
		{"number", map[string]any{"timezone": 9.0}, `get_time: argument "timezone" must be a string, got a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(context.Background(), t, GetTime(nil), tt.args)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestGetTimeDefaultClock(t *testing.T) {
	before := time.Now().Unix()
	res, err := run(context.Background(), t, GetTime(nil), map[string]any{"timezone": "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().Unix()
	if unix := res.Details["unix"].(int64); unix < before || unix > after {
		t.Errorf("unix = %d, want between %d and %d", unix, before, after)
	}
}

func TestGetTimeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run(ctx, t, GetTime(nil), map[string]any{"timezone": "UTC"}); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}
