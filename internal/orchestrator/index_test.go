package orchestrator

import (
	"fmt"
	"testing"
)

// TestIndex puts n keys and reads each back, below, at and beyond the
// number kept in a slice: every key finds its own value, an absent one
// none, and values lists each once.
func TestIndex(t *testing.T) {
	for _, n := range []int{0, 1, indexFew, indexFew + 1, 5 * indexFew} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var x index[int]
			for i := range n {
				v := i
				x.put(fmt.Sprint("k", i), &v)
			}
			if got := x.len(); got != n {
				t.Errorf("len = %d, want %d", got, n)
			}
			for i := range n {
				if v := x.get(fmt.Sprint("k", i)); v == nil || *v != i {
					t.Errorf("get(k%d) = %v, want %d", i, v, i)
				}
			}
			if v := x.get("absent"); v != nil {
				t.Errorf("get(absent) = %d, want nil", *v)
			}
			seen := map[int]bool{}
			for v := range x.values() {
				if seen[*v] {
					t.Errorf("values lists %d twice", *v)
				}
				seen[*v] = true
			}
			if len(seen) != n {
				t.Errorf("values listed %d, want %d", len(seen), n)
			}
			if n > indexFew && x.few != nil {
				t.Errorf("an index of %d entries still holds a slice", n)
			}
		})
	}
}
