package chaos

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
)

// Summary is the configuration a report was made with.
type Summary struct {
	Sessions      int      `json:"sessions"`
	Messages      int      `json:"messages"`
	DurationSec   float64  `json:"duration_s"`
	Faults        int      `json:"faults"`
	FaultKinds    []string `json:"fault_kinds"`
	Orchestrators int      `json:"orchestrators"`
	NATSNodes     int      `json:"nats_nodes"`
	Workers       int      `json:"workers"`
	AckWait       string   `json:"ack_wait"`
	LeaderTTL     string   `json:"leader_ttl"`
	LeaseTTL      string   `json:"lease_ttl"`
}

func summary(c *Config) Summary {
	s := Summary{Sessions: c.Sessions, Messages: c.Messages, DurationSec: c.Duration.Seconds(), Faults: max(c.Faults, 0),
		Orchestrators: c.Orchestrators, NATSNodes: c.NATSNodes, Workers: c.Workers, AckWait: c.AckWait.String(),
		LeaderTTL: c.LeaderTTL.String(), LeaseTTL: c.LeaseTTL.String()}
	for _, k := range c.FaultKinds {
		s.FaultKinds = append(s.FaultKinds, string(k))
	}
	return s
}

// Stats are the minimum, median and maximum of some seconds.
type Stats struct {
	N      int     `json:"n"`
	Min    float64 `json:"min_s"`
	Median float64 `json:"median_s"`
	Max    float64 `json:"max_s"`
}

func stats(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return Stats{N: len(xs), Min: xs[0], Median: xs[len(xs)/2], Max: xs[len(xs)-1]}
}

// Report is the result of one run of the harness.
type Report struct {
	Seed   uint64  `json:"seed"`
	Config Summary `json:"config"`
	// Findings are what the check found in the stored state.
	check.Findings
	// Quiesced says whether every message had a run that ended before the
	// quiesce bound; QuiesceError says what was missing otherwise.
	// StoredRuns are the runs of the history, by run id.
	StoredRuns   map[string]*check.StoredRun `json:"-"`
	Quiesced     bool                        `json:"quiesced"`
	QuiesceError string                      `json:"quiesce_error,omitempty"`
	Faults       []*Fault                    `json:"faults"`
	// Recovery: from a fault to the first run end stored after the fleet
	// was ready again.
	Recovery Stats  `json:"recovery"`
	Exits    []Exit `json:"unexpected_exits,omitempty"`
	// ModelRequests and ModelFailures (injected) of the model server.
	ModelRequests int `json:"model_requests"`
	ModelFailures int `json:"model_failures"`
	// UnknownOutcomes counts the ledger calls answered as of unknown
	// outcome (outcomes.go).
	UnknownOutcomes int `json:"unknown_outcomes"`
	// LoadSeconds is how long publishing took, Seconds the whole run.
	LoadSeconds float64 `json:"load_s"`
	Seconds     float64 `json:"seconds"`
	// WorkDir keeps the NATS store and the logs of the children, when kept.
	WorkDir string `json:"work_dir,omitempty"`
}

// recoveries computes each fault's recovery time from the stored run ends.
func (r *Report) recoveries(recs []*check.Record) {
	var ends []time.Time
	for _, rec := range recs {
		if rec.End {
			ends = append(ends, rec.Time)
		}
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	var xs []float64
	for _, f := range r.Faults {
		f.RecoverySec = -1
		i, _ := slices.BinarySearchFunc(ends, f.ready, func(e, t time.Time) int { return e.Compare(t) })
		if i < len(ends) && !f.ready.IsZero() {
			f.RecoverySec = ends[i].Sub(f.injected).Seconds()
			xs = append(xs, f.RecoverySec)
		}
	}
	r.Recovery = stats(xs)
}

// WriteTables prints the report as tables.
func (r *Report) WriteTables(w io.Writer) {
	fmt.Fprintf(w, "Chaos seed %d: %d messages (%d sent twice) over %d sessions, %d orchestrator(s), %d NATS node(s), %d faults; load %.1fs, total %.1fs\n",
		r.Seed, r.Messages, r.Duplicates, r.Sessions, r.Config.Orchestrators, max(r.Config.NATSNodes, 1), len(r.Faults), r.LoadSeconds, r.Seconds)
	fmt.Fprintf(w, "history: %d runs (%d took several messages), %d records; ledger: %d executions (%d carried a fence), %d calls of unknown outcome; model: %d requests (%d failed on purpose)\n",
		r.Runs, r.BatchedRuns, r.Records, r.LedgerExecutions, r.LedgerFenced, r.UnknownOutcomes, r.ModelRequests, r.ModelFailures)
	if r.AskCalls > 0 || r.ChildRuns > 0 {
		fmt.Fprintf(w, "delegation: %d calls of ask tools, %d child run ends\n", r.AskCalls, r.ChildRuns)
	}
	if len(r.Writers) > 0 {
		var ws []string
		for _, wr := range r.Writers {
			ws = append(ws, fmt.Sprintf("%s (%d runs)", wr, r.RunsByWriter[wr]))
		}
		fmt.Fprintf(w, "writers: %s; runs stored by more than one: %d\n", strings.Join(ws, ", "), r.MultiWriterRuns)
	} else {
		fmt.Fprintln(w, "writers: no record carries "+history.HeaderWriter)
	}
	if r.Quiesced {
		fmt.Fprintln(w, "quiesced: every message has a run that ended")
	} else {
		fmt.Fprintf(w, "quiesced: NO (%s)\n", r.QuiesceError)
	}

	fmt.Fprintln(w, "\nFaults")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "planned s\tinjected s\tkind\ttarget\tready after s\trecovery s\tnote")
	for _, f := range r.Faults {
		rec := "none"
		if f.RecoverySec >= 0 {
			rec = fmt.Sprintf("%.2f", f.RecoverySec)
		}
		fmt.Fprintf(tw, "%.2f\t%.2f\t%s\t%s\t%.2f\t%s\t%s\n", f.AtSec, f.InjectedSec, f.Kind, f.Target, f.ReadySec, rec, f.Note)
	}
	tw.Flush()
	if r.Recovery.N > 0 {
		fmt.Fprintf(w, "recovery: min %.2fs, median %.2fs, max %.2fs over %d faults\n", r.Recovery.Min, r.Recovery.Median, r.Recovery.Max, r.Recovery.N)
	}
	for _, e := range r.Exits {
		fmt.Fprintf(w, "unexpected exit: %s at %.2fs: %s (restarted)\n", e.Process, e.AtSec, e.Error)
	}

	fmt.Fprintln(w, "\nViolations")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "class\tcount\tfirst example")
	for _, v := range r.Violations {
		ex := ""
		if len(v.Examples) > 0 {
			ex = v.Examples[0]
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", v.Class, v.Count, ex)
	}
	tw.Flush()
	for _, v := range r.Violations {
		if len(v.Examples) > 1 {
			fmt.Fprintf(w, "\n%s:\n", v.Class)
			for _, e := range v.Examples {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
	}
	if r.WorkDir != "" {
		fmt.Fprintf(w, "\nlogs and store kept in %s\n", r.WorkDir)
	}
}
