package slots

import "testing"

// TestChoose: the worker with the most free slots is chosen, ties by the
// random number; a worker of unknown limit, a full one and one past its
// ceiling are not; a claim is bounded by MaxClaim and by the ceiling; none
// free means the queue group (-1).
func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		name string
		ws   []Worker
		r    uint32
		want int
	}{
		{"none known", nil, 0, -1},
		{"unknown limit", []Worker{{ID: "a"}}, 0, -1},
		{"most free", []Worker{{ID: "a", Limit: 8, Mine: 7}, {ID: "b", Limit: 8, Mine: 2}, {ID: "c", Limit: 8, Mine: 5}}, 0, 1},
		{"others count", []Worker{{ID: "a", Limit: 8, Mine: 1, Others: 6}, {ID: "b", Limit: 8, Mine: 3}}, 0, 1},
		{"all full", []Worker{{ID: "a", Limit: 8, Mine: 8}, {ID: "b", Limit: 4, Mine: 1, Others: 3}}, 0, -1},
		{"over full", []Worker{{ID: "a", Limit: 2, Mine: 5}}, 0, -1},
		{"negative others are none", []Worker{{ID: "a", Limit: 2, Others: -9}, {ID: "b", Limit: 3}}, 0, 1},
		{"tie first", []Worker{{ID: "a", Limit: 8, Mine: 1}, {ID: "b", Limit: 8, Mine: 7}, {ID: "c", Limit: 8, Mine: 1}}, 0, 0},
		{"tie second", []Worker{{ID: "a", Limit: 8, Mine: 1}, {ID: "b", Limit: 8, Mine: 7}, {ID: "c", Limit: 8, Mine: 1}}, 1, 2},
		{"tie wraps", []Worker{{ID: "a", Limit: 8, Mine: 1}, {ID: "b", Limit: 8, Mine: 7}, {ID: "c", Limit: 8, Mine: 1}}, 4, 0},
		{"huge claim bounded by MaxClaim", []Worker{{ID: "liar", Limit: 1 << 30, Mine: MaxClaim}, {ID: "b", Limit: 8, Mine: 7}}, 0, 1},
		{"huge claim bounded by its ceiling", []Worker{{ID: "liar", Limit: 1 << 30, Ceiling: 2, Mine: 2}, {ID: "b", Limit: 8, Mine: 7}}, 0, 1},
		{"ceiling above the limit does not raise it", []Worker{{ID: "a", Limit: 2, Ceiling: 9, Mine: 2}}, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Choose(tc.ws, tc.r); got != tc.want {
				t.Errorf("Choose = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestChooseSpreadsTies: over random numbers, every tied worker is chosen
// about as often.
func TestChooseSpreadsTies(t *testing.T) {
	ws := []Worker{{ID: "a", Limit: 4}, {ID: "b", Limit: 4}, {ID: "c", Limit: 4}, {ID: "d", Limit: 8, Mine: 5}}
	count := make([]int, len(ws))
	for r := range uint32(300) {
		count[Choose(ws, r)]++
	}
	if count[0] != 100 || count[1] != 100 || count[2] != 100 || count[3] != 0 {
		t.Errorf("choices = %v, want 100 each of the first three", count)
	}
}
