package chaos

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// Class is a class of violation of the fleet's guarantees.
type Class string

// The classes of violations, checked from the stored state.
const (
	// ClassLost: a message that was sent (and acknowledged by JetStream)
	// has no user record in its session's history.
	ClassLost Class = "lost"
	// ClassDupUser: a message id has more than one user record.
	ClassDupUser Class = "duplicated_user"
	// ClassStuck: a run (a user record) has no run end after quiescing.
	ClassStuck Class = "stuck"
	// ClassDupEnd: a run has more than one run end, or more than one
	// final assistant message.
	ClassDupEnd Class = "duplicated_end"
	// ClassReordered: a session's user records are not in the order its
	// messages were published.
	ClassReordered Class = "reordered"
	// ClassInterleaved: a run's records are not contiguous: records of
	// another run come between them (part of "reordered" in the design
	// brief, counted apart).
	ClassInterleaved Class = "interleaved"
	// ClassWrongAnswer: a run's final text is not "answer <id of its last
	// user message>: " and the texts of its tool results after that
	// message; a successful tool result is not what the tool gives for
	// that message; or the run took a user message after it had started
	// working on an earlier one, which so never gets an answer of its own.
	ClassWrongAnswer Class = "wrong_answer"
	// ClassMalformed: a tool result with no earlier call of its run, a
	// call without exactly one result before the run's next assistant
	// message, a run without a user message, an undecodable record.
	ClassMalformed Class = "malformed"
	// ClassLedgerTwice: a call of the non-idempotent ledger tool was
	// executed more than once.
	ClassLedgerTwice Class = "ledger_double_execution"
)

// Classes lists every class in report order.
var Classes = []Class{ClassLost, ClassDupUser, ClassStuck, ClassDupEnd, ClassReordered, ClassInterleaved, ClassWrongAnswer, ClassMalformed, ClassLedgerTwice}

// MaxExamples bounds the examples kept per class.
const MaxExamples = 5

// Violations are the violations of one class: their count and the first
// few, described with session, message id and run.
type Violations struct {
	Class    Class    `json:"class"`
	Count    int      `json:"count"`
	Examples []string `json:"examples,omitempty"`
}

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
	// Sessions, Messages (distinct ids) and Duplicates (messages sent
	// twice) of the load; Runs and Records found in the history.
	Sessions         int `json:"sessions"`
	Messages         int `json:"messages"`
	Duplicates       int `json:"duplicates"`
	Runs             int `json:"runs"`
	Records          int `json:"records"`
	LedgerExecutions int `json:"ledger_executions"`
	// Writers are the Agentfleet-Writer values of the records (empty on
	// orchestrators that do not set it); MultiWriterRuns counts the runs
	// stored by more than one writer (a takeover mid-run).
	Writers         []string `json:"writers,omitempty"`
	MultiWriterRuns int      `json:"multi_writer_runs"`
	// RunsByWriter counts, per writer, the runs it stored records of (a
	// run taken over counts for each of its writers).
	RunsByWriter map[string]int `json:"runs_by_writer,omitempty"`
	// BatchedRuns counts the runs that took more than one user message
	// (queued while the session was busy); the model answers the last.
	BatchedRuns int `json:"batched_runs"`
	// Quiesced says whether every message had a run that ended before the
	// quiesce bound; QuiesceError says what was missing otherwise.
	// StoredRuns are the runs of the history, by run id.
	StoredRuns   map[string]*StoredRun `json:"-"`
	Quiesced     bool                  `json:"quiesced"`
	QuiesceError string                `json:"quiesce_error,omitempty"`
	// Violations, one entry per class, in Classes order.
	Violations []*Violations `json:"violations"`
	Faults     []*Fault      `json:"faults"`
	// Recovery: from a fault to the first run end stored after the fleet
	// was ready again.
	Recovery Stats  `json:"recovery"`
	Exits    []Exit `json:"unexpected_exits,omitempty"`
	// ModelRequests and ModelFailures (injected) of the model server.
	ModelRequests int `json:"model_requests"`
	ModelFailures int `json:"model_failures"`
	// LoadSeconds is how long publishing took, Seconds the whole run.
	LoadSeconds float64 `json:"load_s"`
	Seconds     float64 `json:"seconds"`
	// WorkDir keeps the NATS store and the logs of the children, when kept.
	WorkDir string `json:"work_dir,omitempty"`
}

func newReport() *Report {
	r := &Report{}
	for _, c := range Classes {
		r.Violations = append(r.Violations, &Violations{Class: c})
	}
	return r
}

// add counts one violation of class c and keeps its description among the
// first examples.
func (r *Report) add(c Class, format string, args ...any) {
	for _, v := range r.Violations {
		if v.Class == c {
			v.Count++
			if len(v.Examples) < MaxExamples {
				v.Examples = append(v.Examples, fmt.Sprintf(format, args...))
			}
			return
		}
	}
	panic("chaos: unknown class " + string(c))
}

// Count returns the number of violations of class c.
func (r *Report) Count(c Class) int {
	for _, v := range r.Violations {
		if v.Class == c {
			return v.Count
		}
	}
	return 0
}

// Total returns the number of violations of every class.
func (r *Report) Total() int {
	n := 0
	for _, v := range r.Violations {
		n += v.Count
	}
	return n
}

// recoveries computes each fault's recovery time from the stored run ends.
func (r *Report) recoveries(recs []*record) {
	var ends []time.Time
	for _, rec := range recs {
		if rec.end {
			ends = append(ends, rec.time)
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
	fmt.Fprintf(w, "history: %d runs (%d took several messages), %d records; ledger: %d executions; model: %d requests (%d failed on purpose)\n",
		r.Runs, r.BatchedRuns, r.Records, r.LedgerExecutions, r.ModelRequests, r.ModelFailures)
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
