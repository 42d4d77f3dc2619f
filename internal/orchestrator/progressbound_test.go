package orchestrator

import "testing"

func TestMaxProgressBytes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events int64
		want   int64
	}{
		{"default stream of 1 GiB: the absolute cap", 0, 8 << 20},
		{"1 GiB", 1 << 30, 8 << 20},
		{"64 GiB: still the absolute cap", 64 << 30, 8 << 20},
		{"256 MiB: a 128th", 256 << 20, 2 << 20},
		{"1 MiB: the floor", 1 << 20, 64 << 10},
		{"hostile: negative", -5, 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := maxProgressBytes(tc.events); got != tc.want {
				t.Errorf("maxProgressBytes(%d) = %d, want %d", tc.events, got, tc.want)
			}
		})
	}
}
