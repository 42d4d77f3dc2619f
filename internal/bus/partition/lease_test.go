package partition

import (
	"testing"
	"time"
)

func TestNextRenewal(t *testing.T) {
	t0 := time.Unix(100, 0)
	every := time.Second
	for _, tc := range []struct {
		name string
		now  time.Time
		want time.Duration
	}{
		{"answered at once: a period after the send", t0.Add(10 * time.Millisecond), 990 * time.Millisecond},
		{"answered late: the rest of the period", t0.Add(700 * time.Millisecond), 300 * time.Millisecond},
		{"answered after a period (slow link): at once", t0.Add(1300 * time.Millisecond), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextRenewal(t0, tc.now, every); got != tc.want {
				t.Errorf("nextRenewal = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStoredRenewal(t *testing.T) {
	started := time.Unix(5, 0)
	me := member{ID: "a", Started: started}
	for _, tc := range []struct {
		name     string
		found    member
		foundRev uint64
		want     bool
	}{
		{"our value at a later revision: our unanswered renewal", me, 12, true},
		{"our value, leaving, at a later revision", member{ID: "a", Leaving: true, Started: started}, 12, true},
		{"our value at the revision we hold (a stale read)", me, 10, false},
		{"an older revision (a stale read)", me, 9, false},
		{"another start of this id", member{ID: "a", Started: started.Add(time.Second)}, 12, false},
		{"another member's value", member{ID: "b", Started: started}, 12, false},
		{"garbage: an empty value", member{}, 12, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := storedRenewal("a", started, tc.found, tc.foundRev, 10); got != tc.want {
				t.Errorf("storedRenewal = %v, want %v", got, tc.want)
			}
		})
	}
}
