package netproxy

import (
	"strings"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	slow := Mode{Latency: 400 * time.Millisecond, Jitter: 130 * time.Millisecond}
	for _, tc := range []struct {
		name string
		m    Mode
		u    float64
		want time.Duration
	}{
		{"pass", Mode{}, 0.7, 0},
		{"blackhole adds no delay of its own", Mode{Blackhole: true}, 0.7, 0},
		{"lowest draw", slow, 0, 270 * time.Millisecond},
		{"middle draw", slow, 0.5, 400 * time.Millisecond},
		{"highest draw", slow, 1, 530 * time.Millisecond},
		{"a draw out of range is clamped", slow, 7, 530 * time.Millisecond},
		{"a negative draw is clamped", slow, -1, 270 * time.Millisecond},
		{"no jitter", Mode{Latency: time.Second}, 0.3, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Delay(tc.m, tc.u); got != tc.want {
				t.Errorf("Delay(%v, %v) = %v, want %v", tc.m, tc.u, got, tc.want)
			}
		})
	}
}

func TestDueKeepsOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		arrived time.Time
		delay   time.Duration
		prev    time.Time
		want    time.Time
	}{
		{"first chunk", t0, 300 * time.Millisecond, time.Time{}, t0.Add(300 * time.Millisecond)},
		{"a shorter draw waits for the chunk before it", t0.Add(10 * time.Millisecond), 100 * time.Millisecond, t0.Add(500 * time.Millisecond), t0.Add(500 * time.Millisecond)},
		{"a longer draw is its own", t0.Add(10 * time.Millisecond), time.Second, t0.Add(500 * time.Millisecond), t0.Add(1010 * time.Millisecond)},
		{"held past its due: at once", t0, 0, t0.Add(-time.Second), t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Due(tc.arrived, tc.delay, tc.prev); !got.Equal(tc.want) {
				t.Errorf("Due = %v, want %v", got.Sub(t0), tc.want.Sub(t0))
			}
		})
	}
}

func TestModeValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Mode
		want string // empty: valid
	}{
		{"pass", Mode{}, ""},
		{"blackhole", Mode{Blackhole: true}, ""},
		{"cross-region", Mode{Latency: 400 * time.Millisecond, Jitter: 130 * time.Millisecond}, ""},
		{"negative latency", Mode{Latency: -time.Second}, "latency -1s"},
		{"negative jitter", Mode{Latency: time.Second, Jitter: -time.Millisecond}, "jitter -1ms"},
		{"jitter beyond latency", Mode{Latency: 100 * time.Millisecond, Jitter: 200 * time.Millisecond}, "jitter 200ms is more than the latency 100ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
