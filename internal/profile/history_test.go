package profile

import (
	"strings"
	"testing"
	"time"
)

func TestHistoryProfile(t *testing.T) {
	ps, err := Parse([]byte("agents:\n  - name: bounded\n    history: {max_records: 500, max_bytes: 1048576, max_age: 720h}\n  - name: plain\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n, b, age := ps[0].HistoryBounds(); n != 500 || b != 1<<20 || age != 720*time.Hour {
		t.Errorf("bounded = %d, %d, %s", n, b, age)
	}
	if n, b, age := ps[1].HistoryBounds(); n != 0 || b != 0 || age != 0 {
		t.Errorf("plain = %d, %d, %s, want unbounded", n, b, age)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agents:\n  - name: a\n    history: {max_records: -1}\n", `agent "a": history: max_records -1 is negative`},
		{"agents:\n  - name: a\n    history: {max_records: 1}\n", `agent "a": history: max_records 1 leaves no room`},
		{"agents:\n  - name: a\n    history: {max_bytes: -3}\n", `agent "a": history: max_bytes -3 is negative`},
		{"agents:\n  - name: a\n    history: {max_age: 30d}\n", `agent "a": history: max_age "30d" is not a duration`},
		{"agents:\n  - name: a\n    history: {max_age: -1h}\n", `agent "a": history: max_age "-1h" is not a duration`},
		{"agents:\n  - name: a\n    history: {max_runs: 3}\n", `field max_runs not found`},
		{"agents:\n  - name: a\n    history: 12\n", `cannot unmarshal`},
		{"agents:\n  - name: a\n    max_tokens_per_session: 100\n    history: {max_records: 50}\n", `history bounds and max_tokens_per_session or max_cost_per_session do not go together`},
		{"agents:\n  - name: a\n    max_cost_per_session: 1.5\n    history: {max_age: 1h}\n", `do not go together`},
	} {
		if _, err := Parse([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
	// Zero bounds nothing, so it goes with a session budget.
	if _, err := Parse([]byte("agents:\n  - name: a\n    max_tokens_per_session: 100\n    history: {max_records: 0}\n")); err != nil {
		t.Error(err)
	}
}
