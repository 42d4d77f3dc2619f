package retention_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/retention"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// hist builds records: each run is a user message, an assistant message
// and, if ended, its end record, one stored message each, of 100 bytes
// each, the run i stored at t0 + i hours.
type hist struct{ recs []history.Record }

func (h *hist) add(r history.Record, at time.Time) {
	r.Seq = uint64(len(h.recs) + 1)
	if r.Size == 0 {
		r.Size = 100
	}
	r.Stored = at
	h.recs = append(h.recs, r)
}

func (h *hist) run(id string, i int, ended bool) *hist {
	at := t0.Add(time.Duration(i) * time.Hour)
	h.add(history.Record{RunID: id, Message: agentfleet.NewUserMessage("q " + id)}, at)
	h.add(history.Record{RunID: id, Message: answer("a " + id)}, at)
	if ended {
		h.add(history.Record{RunID: id, Final: answer("a " + id)}, at)
	}
	return h
}

func runs(n int) *hist {
	h := &hist{}
	for i := range n {
		h.run(string(rune('a'+i)), i, true)
	}
	return h
}

func (h *hist) last() uint64 { return h.recs[len(h.recs)-1].Seq }

func TestCut(t *testing.T) {
	now := t0.Add(10 * time.Hour) // run i is 10-i hours old
	summarized := runs(4)
	// A summary written in run c covering the 4 messages of runs a and b.
	summarized.recs = append(summarized.recs[:9:9], append([]history.Record{{Seq: 0, RunID: "d", Summary: &agentfleet.ContextSummary{Covers: 4, Text: "a and b"}}}, summarized.recs[9:]...)...)
	for i := range summarized.recs {
		summarized.recs[i].Seq = uint64(i + 1)
	}
	active := runs(3).run("z", 5, false)
	interrupted := runs(1).run("z", 1, false).run("b", 2, true).run("c", 3, true)
	for i := range interrupted.recs {
		interrupted.recs[i].Seq = uint64(i + 1)
	}
	envelope := runs(3)
	envelope.recs[3].Index, envelope.recs[3].Seq = 1, envelope.recs[2].Seq // run b begins inside run a's envelope
	huge := (&hist{}).run("big", 0, true)
	for i := range 20 {
		huge.add(history.Record{RunID: "big", Message: agentfleet.NewUserMessage("more"), Index: 0}, t0.Add(time.Duration(i)))
	}
	huge.recs[len(huge.recs)-1], huge.recs[2] = huge.recs[2], huge.recs[len(huge.recs)-1]
	for i := range huge.recs {
		huge.recs[i].Seq = uint64(i + 1)
	}
	handed := runs(3)
	handed.recs = append(handed.recs[:2:2], append([]history.Record{{RunID: "a", Handoff: &history.Handoff{From: "x", To: "y"}}}, handed.recs[2:]...)...)
	forked := &hist{}
	forked.add(history.Record{RunID: "fork-1", Forked: &history.Forked{Agent: "x", Source: "src", Records: 0}}, t0)
	forked.run("a", 1, true).run("b", 2, true).run("c", 3, true)
	for _, h := range []*hist{handed, forked} {
		for i := range h.recs {
			h.recs[i].Seq = uint64(i + 1)
		}
	}

	for _, c := range []struct {
		name    string
		h       *hist
		b       retention.Bounds
		last    uint64 // 0: the records' last
		keep    uint64
		runs    int
		met     bool
		why     string
		summary *agentfleet.ContextSummary
		handoff bool
		forked  bool
	}{
		{name: "no bounds", h: runs(5), met: true, why: retention.WhyWithin},
		{name: "nothing to drop", h: runs(3), b: retention.Bounds{MaxRecords: 9, MaxBytes: 900, MaxAge: 11 * time.Hour}, met: true, why: retention.WhyWithin},
		{name: "records alone", h: runs(5), b: retention.Bounds{MaxRecords: 10}, keep: 7, runs: 2, met: true},
		{name: "records: the retained record counts", h: runs(5), b: retention.Bounds{MaxRecords: 9}, keep: 10, runs: 3, met: true},
		{name: "bytes alone", h: runs(5), b: retention.Bounds{MaxBytes: 650}, keep: 10, runs: 3, met: true},
		{name: "age alone", h: runs(5), b: retention.Bounds{MaxAge: 7*time.Hour + time.Minute}, keep: 10, runs: 3, met: true},
		{name: "all together: the tightest wins", h: runs(5), b: retention.Bounds{MaxRecords: 13, MaxBytes: 1000, MaxAge: 7*time.Hour + time.Minute}, keep: 10, runs: 3, met: true},
		{name: "never the last run", h: runs(3), b: retention.Bounds{MaxRecords: 2}, keep: 7, runs: 2, why: retention.WhyActive},
		{name: "the active run stays", h: active, b: retention.Bounds{MaxRecords: 2}, keep: 10, runs: 3, why: retention.WhyActive},
		{name: "an unended run stays, and those after it", h: interrupted, b: retention.Bounds{MaxRecords: 2}, keep: 4, runs: 1, why: retention.WhyActive},
		{name: "a run ended less than Settled ago stays, and those after it", h: runs(5), b: retention.Bounds{MaxRecords: 4, Settled: 8*time.Hour + 30*time.Minute}, keep: 7, runs: 2, why: retention.WhyActive},
		{name: "settled runs drop as the bounds ask", h: runs(5), b: retention.Bounds{MaxRecords: 10, Settled: time.Hour}, keep: 7, runs: 2, met: true},
		{name: "one huge run: cannot drop, stays", h: huge, b: retention.Bounds{MaxRecords: 5}, why: retention.WhyActive},
		{name: "stale view: someone wrote since", h: runs(5), b: retention.Bounds{MaxRecords: 4}, last: 14, why: retention.WhyStale},
		{name: "a run that begins inside an envelope is no cut", h: envelope, b: retention.Bounds{MaxRecords: 7}, keep: 7, runs: 2, met: true},
		{name: "summary covering the dropped: rebased", h: summarized, b: retention.Bounds{MaxRecords: 11}, keep: 4, runs: 1, met: true,
			summary: &agentfleet.ContextSummary{Covers: 2, Text: "a and b"}},
		{name: "summary covering the dropped exactly: covers 0, kept", h: summarized, b: retention.Bounds{MaxRecords: 8}, keep: 7, runs: 2, met: true,
			summary: &agentfleet.ContextSummary{Covers: 0, Text: "a and b"}},
		{name: "cut past the summary: covers 0, kept", h: summarized, b: retention.Bounds{MaxRecords: 5}, keep: 10, runs: 3, met: true,
			summary: &agentfleet.ContextSummary{Covers: 0, Text: "a and b"}},
		{name: "last handoff dropped: carried", h: handed, b: retention.Bounds{MaxRecords: 8}, keep: 5, runs: 1, met: true, handoff: true},
		{name: "forked record dropped: carried", h: forked, b: retention.Bounds{MaxRecords: 5}, keep: 8, runs: 3, met: true, forked: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			last := c.last
			if last == 0 {
				last = c.h.last()
			}
			d := retention.Cut(c.h.recs, last, c.b, now)
			if d.Keep != c.keep || d.Retained.Runs != c.runs || d.Met != c.met || d.Why != c.why {
				t.Fatalf("got keep %d runs %d met %v why %q; want keep %d runs %d met %v why %q", d.Keep, d.Retained.Runs, d.Met, d.Why, c.keep, c.runs, c.met, c.why)
			}
			if d.Keep > 0 {
				if d.Retained.FirstSeq != d.Keep {
					t.Errorf("retained first_seq %d, keep %d", d.Retained.FirstSeq, d.Keep)
				}
				// Whole runs only: the first record kept begins a run.
				for i, r := range c.h.recs {
					if r.Seq == d.Keep && i > 0 && c.h.recs[i-1].RunID == r.RunID {
						t.Errorf("the cut at %d splits run %s", d.Keep, r.RunID)
					}
				}
			}
			if (d.Retained.Summary == nil) != (c.summary == nil) || (c.summary != nil && *d.Retained.Summary != *c.summary) {
				t.Errorf("summary %+v, want %+v", d.Retained.Summary, c.summary)
			}
			if (d.Retained.Handoff != nil) != c.handoff || (d.Retained.Forked != nil) != c.forked {
				t.Errorf("handoff %+v forked %+v", d.Retained.Handoff, d.Retained.Forked)
			}
		})
	}
}

func TestOver(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, c := range []struct {
		b       retention.Bounds
		n, size int
		oldest  time.Time
		want    bool
	}{
		{retention.Bounds{}, 1e6, 1e9, t0, false},
		{retention.Bounds{MaxRecords: 10}, 10, 0, t0, false},
		{retention.Bounds{MaxRecords: 10}, 11, 0, t0, true},
		{retention.Bounds{MaxBytes: 10}, 1, 11, t0, true},
		{retention.Bounds{MaxAge: time.Hour}, 1, 1, t0, false},
		{retention.Bounds{MaxAge: time.Minute}, 1, 1, t0, true},
		{retention.Bounds{MaxAge: time.Minute}, 1, 1, time.Time{}, false},
	} {
		if got := c.b.Over(c.n, c.size, c.oldest, now); got != c.want {
			t.Errorf("%+v.Over(%d, %d, %v) = %v", c.b, c.n, c.size, c.oldest, got)
		}
	}
}

func answer(text string) *agentfleet.AssistantMessage {
	return &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text(text)}}
}
