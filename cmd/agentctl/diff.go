package main

// diff prints two stored runs side by side (package rundiff aligns them).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agentfleet/agentfleet/internal/rundiff"
)

func checkDiff(m *Main, pos []string) error {
	if len(pos) != 4 && len(pos) != 5 {
		return fmt.Errorf("want <agent> <session> <run> <other-session> [other-run], got %d argument(s)", len(pos))
	}
	for _, c := range []struct{ what, v string }{{"agent", pos[0]}, {"session", pos[1]}, {"other session", pos[3]}} {
		if err := checkName(c.what, c.v); err != nil {
			return err
		}
	}
	if err := checkRunID(pos[2]); err != nil {
		return err
	}
	if len(pos) == 5 {
		return checkRunID(pos[4])
	}
	return nil
}

// diffRuns reads both sessions' histories and prints the two runs side by
// side.
func (m *Main) diffRuns(ctx context.Context) error {
	agent, session, runID, other := m.pos[0], m.pos[1], m.pos[2], m.pos[3]
	h, err := m.loadHistory(ctx, agent, session)
	if err != nil || h == nil {
		return err
	}
	a, err := rundiff.Extract(session, diffRecords(h.Records), runID)
	if err != nil {
		return err
	}
	h2, err := m.loadHistory(ctx, agent, other)
	if err != nil || h2 == nil {
		return err
	}
	recs := diffRecords(h2.Records)
	otherRun := ""
	if len(m.pos) == 5 {
		otherRun = m.pos[4]
	} else if otherRun, err = rundiff.AfterFork(recs); err != nil {
		return fmt.Errorf("session %s: %w", other, err)
	}
	b, err := rundiff.Extract(other, recs, otherRun)
	if err != nil {
		return err
	}
	d := rundiff.Compare(a, b)
	if m.JSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	writeDiff(m.Stdout, &d)
	return nil
}

// diffColumn bounds the text of one run in a row.
const diffColumn = 60

// writeDiff writes d as a table: a row per line, the two runs in columns,
// "≠" before the rows that differ.
func writeDiff(w io.Writer, d *rundiff.Diff) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range d.Rows {
		mark := " "
		if !r.Same && r.Label != "session" && r.Label != "run" {
			mark = "≠"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\n", mark, r.Label, rundiff.Shorten(r.A, diffColumn), rundiff.Shorten(r.B, diffColumn))
	}
	tw.Flush()
	if n := d.Differs(); n == 0 {
		fmt.Fprintln(w, "the runs are the same")
	} else {
		fmt.Fprintf(w, "%d rows differ\n", n)
	}
}
