package check

import (
	"slices"
	"testing"
	"time"
)

func TestRunDurations(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	recs := []*Record{
		{Run: "before", Writer: "a", Time: at(0)},
		{Run: "slow", Writer: "a", Time: at(2)},
		{Run: "other", Writer: "b", Time: at(2.5)},
		{Run: "fast", Writer: "a", Time: at(3)},
		{Run: "before", Writer: "a", Time: at(3.5), End: true},
		{Run: "fast", Writer: "a", Time: at(4), End: true},
		{Run: "fast", Writer: "a", Time: at(4.5), End: true}, // a second end counts once
		{Run: "other", Writer: "b", Time: at(5), End: true},
		{Run: "slow", Writer: "c", Time: at(10), End: true}, // resumed and ended by another
		{Run: "unended", Writer: "a", Time: at(4)},
		{Run: "late", Writer: "a", Time: at(6)},
		{Seq: 99}, // no run
	}
	took, open := RunDurations(recs, []string{"a"}, at(1), at(5))
	if want := []time.Duration{time.Second, 8 * time.Second}; !slices.Equal(took, want) {
		t.Errorf("took %v, want %v", took, want)
	}
	if open != 1 {
		t.Errorf("open %d, want 1 (unended)", open)
	}
	if took, open := RunDurations(nil, []string{"a"}, at(1), at(5)); len(took) != 0 || open != 0 {
		t.Errorf("no records: %v, %d", took, open)
	}
}
