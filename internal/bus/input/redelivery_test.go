package input

import (
	"testing"
	"time"
)

// TestRedeliveryBackoff holds the waits before a failed message is
// delivered again: the bound doubles from 250ms with every failure up to
// 30s, and the wait is drawn from the upper half of it.
func TestRedeliveryBackoff(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		failures int
		bound    time.Duration
	}{
		{1, 250 * ms},
		{2, 500 * ms},
		{3, time.Second},
		{4, 2 * time.Second},
		{5, 4 * time.Second},
		{6, 8 * time.Second},
		{7, 16 * time.Second},
		{8, 30 * time.Second},
		{9, 30 * time.Second},
		{100, 30 * time.Second},
	}
	for _, tt := range tests {
		if got := redelivery.Bound(tt.failures); got != tt.bound {
			t.Errorf("bound after %d failures = %v, want %v", tt.failures, got, tt.bound)
		}
		for range 200 {
			if d := redelivery.Delay(tt.failures); d < tt.bound/2 || d > tt.bound {
				t.Fatalf("wait after %d failures = %v, want within [%v, %v]", tt.failures, d, tt.bound/2, tt.bound)
			}
		}
	}
}
