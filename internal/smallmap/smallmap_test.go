package smallmap

import (
	"fmt"
	"testing"
)

// TestMap puts n keys and reads each back, below, at and beyond the
// number kept in a slice: every key finds its own value, an absent one
// none, and values lists each once.
func TestMap(t *testing.T) {
	for _, n := range []int{0, 1, Few, Few + 1, 5 * Few} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var x Map[int]
			for i := range n {
				v := i
				x.Put(fmt.Sprint("k", i), &v)
			}
			if got := x.Len(); got != n {
				t.Errorf("len = %d, want %d", got, n)
			}
			for i := range n {
				if v := x.Get(fmt.Sprint("k", i)); v == nil || *v != i {
					t.Errorf("get(k%d) = %v, want %d", i, v, i)
				}
			}
			if v := x.Get("absent"); v != nil {
				t.Errorf("get(absent) = %d, want nil", *v)
			}
			seen := map[int]bool{}
			for v := range x.Values() {
				if seen[*v] {
					t.Errorf("values lists %d twice", *v)
				}
				seen[*v] = true
			}
			if len(seen) != n {
				t.Errorf("values listed %d, want %d", len(seen), n)
			}
			if n > Few && x.few != nil {
				t.Errorf("a Map of %d entries still holds a slice", n)
			}
		})
	}
}
