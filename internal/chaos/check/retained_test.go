package check

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

func TestVisible(t *testing.T) {
	u := func(seq uint64, s, run, id string) *Record {
		return &Record{Seq: seq, Session: s, Run: run, Msg: &agentfleet.UserMessage{ID: id}}
	}
	recs := []*Record{
		u(1, "a", "r1", "m1"), u(2, "b", "q1", "n1"), u(3, "a", "r2", "m2"),
		{Seq: 4, Session: "a", Run: "r2", Cut: 3}, // a's first cut: r1 dropped
		u(5, "a", "r3", "m3"),
		{Seq: 6, Session: "a", Run: "r3", Cut: 5}, // a's second: r2 too
		u(7, "b", "q2", "n2"),
	}
	var got []uint64
	for _, r := range Visible(recs) {
		got = append(got, r.Seq)
	}
	if want := []uint64{2, 5, 7}; !equal(got, want) {
		t.Errorf("visible seqs %v, want %v", got, want)
	}
	if n := len(Visible(recs[:3])); n != 3 {
		t.Errorf("without a cut %d visible, want all 3", n)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestKept(t *testing.T) {
	p := &Plan{Sessions: []*SessionPlan{
		{Name: "a", Messages: []*Message{{ID: "m1"}, {ID: "m2"}, {ID: "m3"}}},
		{Name: "b", Messages: []*Message{{ID: "n1"}}},
		{Name: "c", Messages: []*Message{{ID: "k1"}}},
	}}
	visible := []*Record{
		{Seq: 5, Session: "a", Run: "r3", Msg: &agentfleet.UserMessage{ID: "m3"}},
		{Seq: 2, Session: "b", Run: "q1", Msg: &agentfleet.UserMessage{ID: "n1"}},
	}
	kept, dropped := Kept(p, visible)
	if dropped != 2 {
		t.Errorf("dropped %d, want 2 (m1, m2)", dropped)
	}
	if ids := kept.Sessions[0].PublishOrder(); len(ids) != 1 || ids[0] != "m3" {
		t.Errorf("a keeps %v, want [m3]", ids)
	}
	if n := len(kept.Sessions[1].Messages); n != 1 {
		t.Errorf("b keeps %d, want 1", n)
	}
	// A session with nothing visible keeps its plan: its messages are lost.
	if n := len(kept.Sessions[2].Messages); n != 1 {
		t.Errorf("c keeps %d, want its 1 (reported lost)", n)
	}
}

func TestVerifyBound(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	ends := map[string]time.Time{"r0": t0, "r1": t0, "r2": t0.Add(time.Minute), "r3": t0.Add(2 * time.Minute), "r4": t0.Add(2 * time.Minute), "q1": t0}
	run := func(s, id string, n int) []*Record {
		var out []*Record
		for range n {
			out = append(out, &Record{Session: s, Run: id, Time: ends[id]})
		}
		return out
	}
	for _, tt := range []struct {
		name string
		recs []*Record
		want int
	}{
		{"within the bound", append(run("a", "r1", 6), run("a", "r2", 6)...), 0},
		{"the last run alone over it", run("a", "r1", 30), 0},
		{"over before the last two runs", append(append(append(run("a", "r0", 13), run("a", "r1", 1)...), run("a", "r2", 1)...), run("a", "r3", 2)...), 1},
		{"the run before the last over: a cut lost to a crash", append(append(run("a", "r1", 8), run("a", "r2", 8)...), run("a", "r3", 2)...), 0},
		{"one session over, one not", append(append(append(run("a", "r0", 13), run("a", "r1", 1)...), run("a", "r2", 1)...), run("b", "q1", 12)...), 1},
		{"over, but with runs too young to be cut", append(append(append(run("a", "r0", 13), run("a", "r2", 8)...), run("a", "r3", 2)...), run("a", "r4", 2)...), -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f Findings
			f = *newFindings()
			settled, want := time.Duration(0), tt.want
			if want < 0 { // r0 ended 2 minutes before r4: young at a settle of 3 min
				settled, want = 3*time.Minute, 0
			}
			f.VerifyBound(tt.recs, 12, settled)
			if got := f.Count(ClassOverBound); got != want {
				t.Errorf("%d violations, want %d: %v", got, tt.want, f.Violations)
			}
		})
	}
}
