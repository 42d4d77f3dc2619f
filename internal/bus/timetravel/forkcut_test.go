package timetravel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
)

// TestForkOfACutSession forks a session whose first run a retained record
// dropped (its history bounds): the fork copies the records kept and the
// retained record, whose summary holds for the copy but whose sequence,
// the source's, is cleared, so that a load of the fork drops nothing of
// it; a point the cut dropped cannot be forked from.
func TestForkOfACutSession(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	seqs := seed(t, st, "src")
	last, err := st.Load(ctx, "default", "src")
	if err != nil {
		t.Fatal(err)
	}
	w := st.Writer("default", "src", last.LastSeq, ownership.Unfenced, ownership.Fence{})
	sum := &agentfleet.ContextSummary{Covers: 0, Text: "they asked a first question"}
	if _, err := w.AppendRetained(ctx, "retain-1", &history.Retained{FirstSeq: seqs[3], Runs: 1, Records: 4, Summary: sum}); err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, "default", "src", seqs[3]); err != nil {
		t.Fatal(err)
	}
	f, err := timetravel.Fork(ctx, st, "default", "src", timetravel.Request{NewSession: "copy"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Load(ctx, "default", "copy")
	if err != nil {
		t.Fatal(err)
	}
	// The summary record, run r2's two records, the retained record, the
	// forked record.
	if f.Records != 4 || len(got.Records) != 5 || got.Hidden != 0 {
		t.Fatalf("fork of %d records loads %d (%d hidden), want 4 + forked, none hidden", f.Records, len(got.Records), got.Hidden)
	}
	r := got.Records[3].Retained
	if r == nil || r.FirstSeq != 0 || r.Summary == nil || r.Summary.Text != sum.Text {
		t.Fatalf("copied retained record %+v, want the summary and no sequence", r)
	}
	if _, err := timetravel.Fork(ctx, st, "default", "src", timetravel.Request{NewSession: "old", Point: timetravel.Point{AtSeq: seqs[1]}}); err == nil || !strings.Contains(err.Error(), "no stored message") {
		t.Errorf("fork at a point the cut dropped: %v, want a refusal", err)
	}
}
