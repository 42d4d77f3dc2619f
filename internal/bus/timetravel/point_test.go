package timetravel

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/history"
)

func TestCut(t *testing.T) {
	// Two runs; stored message 7 is an envelope of two records.
	recs := []history.Record{
		{Seq: 3, RunID: "r1"}, {Seq: 5, RunID: "r1"},
		{Seq: 7, Index: 0, RunID: "r1"}, {Seq: 7, Index: 1, RunID: "r1"},
		{Seq: 9, RunID: "r2"}, {Seq: 12, RunID: "r2"},
	}
	for _, tc := range []struct {
		name string
		p    Point
		want int
		err  string
	}{
		{"whole", Point{}, 6, ""},
		{"at first", Point{AtSeq: 3}, 1, ""},
		{"at envelope takes all of it", Point{AtSeq: 7}, 4, ""},
		{"at last", Point{AtSeq: 12}, 6, ""},
		{"before first run", Point{BeforeRun: "r1"}, 0, ""},
		{"before second run", Point{BeforeRun: "r2"}, 4, ""},
		{"gap sequence", Point{AtSeq: 8}, 0, "no stored message 8"},
		{"past the end", Point{AtSeq: 99}, 0, "no stored message 99"},
		{"unknown run", Point{BeforeRun: "r9"}, 0, `no run "r9"`},
		{"both", Point{AtSeq: 3, BeforeRun: "r2"}, 0, "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Cut(recs, tc.p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Cut(%+v) = %d, %v; want error with %q", tc.p, n, err, tc.err)
				}
				return
			}
			if err != nil || n != tc.want {
				t.Fatalf("Cut(%+v) = %d, %v; want %d", tc.p, n, err, tc.want)
			}
		})
	}
}
