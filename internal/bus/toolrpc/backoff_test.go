package toolrpc

import (
	"testing"
	"time"
)

// TestBusyBackoff holds the waits after busy refusals with the default
// configuration: the bound doubles from 5ms per refusal up to 250ms, and
// the wait is drawn below it.
func TestBusyBackoff(t *testing.T) {
	ms := time.Millisecond
	p := busyBackoff(ClientConfig{BusyBackoff: 5 * ms, MaxBusyBackoff: 250 * ms})
	tests := []struct {
		refusals int
		bound    time.Duration
	}{
		{1, 5 * ms}, {2, 10 * ms}, {3, 20 * ms}, {4, 40 * ms}, {5, 80 * ms}, {6, 160 * ms},
		{7, 250 * ms}, {8, 250 * ms}, {31, 250 * ms}, {1000, 250 * ms},
	}
	for _, tt := range tests {
		if got := p.Bound(tt.refusals); got != tt.bound {
			t.Errorf("bound after %d refusals = %v, want %v", tt.refusals, got, tt.bound)
		}
		for range 200 {
			if d := p.Delay(tt.refusals); d < 0 || d > tt.bound {
				t.Fatalf("wait after %d refusals = %v, want within [0, %v]", tt.refusals, d, tt.bound)
			}
		}
	}
}

// TestLostBackoff holds the retry of lost attempts with the default
// configuration: three attempts, the wait after attempt n drawn from the
// upper half of 100ms doubled n-1 times.
func TestLostBackoff(t *testing.T) {
	ms := time.Millisecond
	p := lostBackoff(ClientConfig{RetryBackoff: 100 * ms, MaxAttempts: 3})
	if p.MaxAttempts != 3 {
		t.Errorf("MaxAttempts = %d, want 3", p.MaxAttempts)
	}
	for _, tt := range []struct {
		attempt int
		bound   time.Duration
	}{{1, 100 * ms}, {2, 200 * ms}, {3, 400 * ms}, {5, 1600 * ms}} {
		if got := p.Bound(tt.attempt); got != tt.bound {
			t.Errorf("bound after attempt %d = %v, want %v", tt.attempt, got, tt.bound)
		}
		for range 200 {
			if d := p.Delay(tt.attempt); d < tt.bound/2 || d > tt.bound {
				t.Fatalf("wait after attempt %d = %v, want within [%v, %v]", tt.attempt, d, tt.bound/2, tt.bound)
			}
		}
	}
}
