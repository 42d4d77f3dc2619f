package slots

import (
	"testing"
	"time"
)

// TestTable walks one caller's table through what its calls see: picks
// fill the freest worker first; a refusal takes a worker out until a call
// of it ends and teaches a lying limit, and counts the others' calls;
// what a refusal taught is forgotten after RefusalMemory; a gone worker is
// not chosen until the fleet lists it again.
func TestTable(t *testing.T) {
	var tb Table
	if got := tb.Pick("sleep"); got != "" {
		t.Fatalf("empty table picked %q", got)
	}
	tb.Set(map[string][]Offer{"sleep": {{ID: "a", Limit: 2}, {ID: "b", Limit: 1}, {ID: "bad", Limit: 0}, {Limit: 5}}})
	if got, want := len(tb.Workers("sleep")), 2; got != want {
		t.Fatalf("%d workers known, want %d (no limit, no id: not offered)", got, want)
	}
	picks := map[string]int{}
	for range 3 {
		picks[tb.Pick("sleep")]++
	}
	if picks["a"] != 2 || picks["b"] != 1 {
		t.Fatalf("picks = %v, want a twice and b once", picks)
	}
	if got := tb.Pick("sleep"); got != "" {
		t.Fatalf("full fleet picked %q, want the queue group", got)
	}
	tb.Ended("b")
	if got := tb.Pick("sleep"); got != "b" {
		t.Fatalf("picked %q, want b, whose call ended", got)
	}

	// A worker that declares 1,000 slots but refuses at 2.
	tb.Set(map[string][]Offer{"sleep": {{ID: "liar", Limit: 1000}}})
	for range 3 {
		if got := tb.Pick("sleep"); got != "liar" {
			t.Fatalf("picked %q, want liar", got)
		}
	}
	tb.Refused("liar", 2)
	if got := tb.Pick("sleep"); got != "" {
		t.Fatalf("picked %q right after a refusal, want the queue group", got)
	}
	w := tb.Workers("sleep")[0]
	if w.Ceiling != 2 || w.Mine != 2 || w.Free() != 0 {
		t.Fatalf("after the refusal: %+v, free %d; want ceiling 2, mine 2, free 0", w, w.Free())
	}
	tb.Ended("liar")
	if got := tb.Pick("sleep"); got != "liar" {
		t.Fatalf("picked %q after a call ended, want liar", got)
	}
	if got := tb.Pick("sleep"); got != "" {
		t.Fatalf("picked %q past the ceiling, want the queue group", got)
	}
	// The ceiling rises by one per ceiling's worth of calls ended.
	tb.Ended("liar")
	tb.Ended("liar")
	if w := tb.Workers("sleep")[0]; w.Ceiling != 3 {
		t.Fatalf("ceiling %d after 2 calls ended, want 3", w.Ceiling)
	}

	// Other callers' calls, as a refusal reports them.
	tb.Set(map[string][]Offer{"sleep": {{ID: "x", Limit: 4}}})
	if got := tb.Pick("sleep"); got != "x" {
		t.Fatalf("picked %q, want x", got)
	}
	if got := tb.Pick("sleep"); got != "x" {
		t.Fatalf("picked %q, want x", got)
	}
	tb.Refused("x", 4) // full: ours and 3 others
	if w := tb.Workers("sleep")[0]; w.Others != 3 || w.Mine != 1 || w.Ceiling != 0 || w.Free() != 0 {
		t.Fatalf("after a refusal at its limit: %+v; want 3 others, 1 mine, no ceiling, no free slot", w)
	}
	tb.Ended("x") // the others' calls age by one
	if w := tb.Workers("sleep")[0]; w.Others != 2 || w.Mine != 0 {
		t.Fatalf("after a call ended: %+v; want 2 others, none mine", w)
	}
	if !tb.Took("x") || tb.Took("unknown") {
		t.Fatal("Took: want x known, unknown not")
	}
	if w := tb.Workers("sleep")[0]; w.Mine != 1 {
		t.Fatalf("after Took: %+v; want 1 mine", w)
	}
	tb.Ended("x")

	// What a refusal taught of the others' calls is forgotten after
	// RefusalMemory, when no call of this caller's there ended to tell.
	at := time.Unix(1000, 0)
	tb.clock = func() time.Time { return at }
	tb.Set(map[string][]Offer{"sleep": {{ID: "y", Limit: 2}}})
	if got := tb.Pick("sleep"); got != "y" {
		t.Fatalf("picked %q, want y", got)
	}
	tb.Refused("y", 2) // full of others' calls; none of ours left there
	if got := tb.Pick("sleep"); got != "" {
		t.Fatalf("picked %q right after the refusal, want the queue group", got)
	}
	at = at.Add(RefusalMemory)
	if got := tb.Pick("sleep"); got != "y" {
		t.Fatalf("picked %q after RefusalMemory, want y again", got)
	}
	tb.Ended("y")
	tb.clock = nil
	tb.Set(map[string][]Offer{"sleep": {{ID: "x", Limit: 4}}})

	// A worker whose subject has no subscriber.
	if got := tb.Pick("sleep"); got != "x" {
		t.Fatalf("picked %q, want x", got)
	}
	tb.Gone("x")
	if got := tb.Pick("sleep"); got != "" {
		t.Fatalf("picked gone worker %q", got)
	}
	tb.Set(map[string][]Offer{"sleep": {{ID: "x", Limit: 4}}})
	if got := tb.Pick("sleep"); got != "x" {
		t.Fatalf("picked %q after the fleet listed x again, want x", got)
	}
	// Ends of unknown workers change nothing.
	tb.Ended("nobody")
	tb.Refused("nobody", 3)
	tb.Gone("nobody")
}
