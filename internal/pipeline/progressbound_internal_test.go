package pipeline

import "testing"

func TestProgressBoundTake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   int64
		sizes   []int64
		out     []bool
		dropped int
	}{
		{"within", 100, []int64{40, 40}, []bool{true, true}, 0},
		{"exactly the limit", 100, []int64{60, 40}, []bool{true, true}, 0},
		{"past the limit", 100, []int64{60, 41}, []bool{true, false}, 1},
		// Once one is dropped, the small ones after it are too: what
		// goes out is a prefix of what was sent.
		{"nothing after the first drop", 100, []int64{60, 50, 1, 1}, []bool{true, false, false, false}, 3},
		{"one larger than the limit", 100, []int64{101}, []bool{false}, 1},
		{"hostile: negative size", 100, []int64{-1, 10}, []bool{false, false}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := progressBound{limit: tc.limit}
			for i, n := range tc.sizes {
				if got := b.take(n); got != tc.out[i] {
					t.Errorf("take #%d of %d = %v, want %v", i+1, n, got, tc.out[i])
				}
			}
			if b.dropped != tc.dropped {
				t.Errorf("dropped %d, want %d", b.dropped, tc.dropped)
			}
			if n := b.droppedNotice(); (n != nil) != (tc.dropped > 0) {
				t.Errorf("notice %v with %d dropped", n, tc.dropped)
			}
		})
	}
}
