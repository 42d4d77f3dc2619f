package partition

import (
	"fmt"
	"slices"
	"testing"
)

func TestAssignBalancedAndDeterministic(t *testing.T) {
	for k := 1; k <= 7; k++ {
		var members []string
		for i := range k {
			members = append(members, fmt.Sprintf("orch-%d", i))
		}
		owners := Assign(members, 64)
		count := map[string]int{}
		for p, o := range owners {
			if o == "" {
				t.Fatalf("%d members: partition %d has no owner", k, p)
			}
			count[o]++
		}
		for _, m := range members {
			if c := count[m]; c != 64/k && c != 64/k+1 {
				t.Errorf("%d members: %s owns %d partitions, want %d or %d", k, m, c, 64/k, 64/k+1)
			}
		}
		shuffled := slices.Clone(members)
		slices.Reverse(shuffled)
		if !slices.Equal(Assign(shuffled, 64), owners) {
			t.Errorf("%d members: the table depends on the order of the members", k)
		}
	}
	if owners := Assign(nil, 4); !slices.Equal(owners, []string{"", "", "", ""}) {
		t.Errorf("no members: %q", owners)
	}
}

// A member that joins or leaves moves little more than its own share.
func TestAssignMovesLittle(t *testing.T) {
	three := Assign([]string{"a", "b", "c"}, 64)
	four := Assign([]string{"a", "b", "c", "d"}, 64)
	moved := 0
	for p := range 64 {
		if three[p] != four[p] && four[p] != "d" {
			moved++
		}
	}
	// d takes 16; moves between a, b and c beyond that are the quota's cost.
	if moved > 8 {
		t.Errorf("d joining moved %d partitions among a, b and c", moved)
	}
	if got := len(Of(four, "d")); got != 16 {
		t.Errorf("d owns %d partitions, want 16", got)
	}
}
