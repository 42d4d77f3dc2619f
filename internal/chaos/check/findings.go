package check

import "fmt"

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
	// ClassLedgerDeposed: the ledger tool executed a call whose fence
	// epoch is older than that of a call of the same partition it had
	// executed before: a call of a deposed owner reached the side effect.
	ClassLedgerDeposed Class = "ledger_deposed_owner"
)

// Classes lists every class in report order.
var Classes = []Class{ClassLost, ClassDupUser, ClassStuck, ClassDupEnd, ClassReordered, ClassInterleaved, ClassWrongAnswer, ClassMalformed, ClassLedgerTwice, ClassLedgerDeposed, ClassAskResults, ClassDupChild, ClassErased, ClassOverBound}

// MaxExamples bounds the examples kept per class.
const MaxExamples = 5

// Violations are the violations of one class: their count and the first
// few, described with session, message id and run.
type Violations struct {
	Class    Class    `json:"class"`
	Count    int      `json:"count"`
	Examples []string `json:"examples,omitempty"`
}

// Findings are what the check found in the stored state: the size of the
// load and of the history, and the violations, one entry per class.
type Findings struct {
	// Sessions, Messages (distinct ids) and Duplicates (messages sent
	// twice) of the load; Runs and Records found in the history.
	Sessions         int `json:"sessions"`
	Messages         int `json:"messages"`
	Duplicates       int `json:"duplicates"`
	Runs             int `json:"runs"`
	Records          int `json:"records"`
	LedgerExecutions int `json:"ledger_executions"`
	// LedgerFenced counts the ledger executions whose call carried a
	// fence (Agentfleet-Fence), which the deposed-owner check judges.
	LedgerFenced int `json:"ledger_fenced"`
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
	// AskCalls counts the parents' calls of ask tools, ChildRuns the run
	// ends of the child agent's sessions (VerifyDelegation).
	AskCalls  int `json:"ask_calls"`
	ChildRuns int `json:"child_runs"`
	// Violations, one entry per class, in Classes order.
	Violations []*Violations `json:"violations"`
}

func newFindings() *Findings {
	r := &Findings{}
	for _, c := range Classes {
		r.Violations = append(r.Violations, &Violations{Class: c})
	}
	return r
}

// add counts one violation of class c and keeps its description among the
// first examples.
func (r *Findings) add(c Class, format string, args ...any) {
	for _, v := range r.Violations {
		if v.Class == c {
			v.Count++
			if len(v.Examples) < MaxExamples {
				v.Examples = append(v.Examples, fmt.Sprintf(format, args...))
			}
			return
		}
	}
	panic("check: unknown class " + string(c))
}

// Count returns the number of violations of class c.
func (r *Findings) Count(c Class) int {
	for _, v := range r.Violations {
		if v.Class == c {
			return v.Count
		}
	}
	return 0
}

// Total returns the number of violations of every class.
func (r *Findings) Total() int {
	n := 0
	for _, v := range r.Violations {
		n += v.Count
	}
	return n
}
