package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
)

// run is what the history holds of one run.
type run struct {
	id, session string
	// msgid is the id of the run's last user message, the one the model
	// answers; users are the ids of all its user messages, in order. A run
	// takes every message queued when it starts (loop.Session), so it may
	// have several.
	msgid   string
	users   []string
	recs    []*Record
	ends    []*Record
	finals  int // assistant messages without tool calls
	writers []string
}

// Verify checks the stored history and ledger against the plan. It
// reads nothing and changes none of its arguments.
func Verify(p *Plan, recs []*Record, ledger []LedgerRecord) Findings {
	rep := newFindings()
	rep.Sessions = len(p.Sessions)
	rep.Messages, rep.Duplicates = p.Count()
	rep.Records = len(recs)
	rep.LedgerExecutions = len(ledger)
	bySession := map[string][]*Record{}
	writers := map[string]bool{}
	for _, r := range recs {
		bySession[r.Session] = append(bySession[r.Session], r)
		if r.Writer != "" {
			writers[r.Writer] = true
		}
	}
	for w := range writers {
		rep.Writers = append(rep.Writers, w)
	}
	slices.Sort(rep.Writers)
	planned := map[string]*SessionPlan{}
	for _, s := range p.Sessions {
		planned[s.Name] = s
	}
	for _, name := range sortedKeys(bySession) {
		if planned[name] == nil {
			rep.add(ClassMalformed, "session %s: not in the plan, yet %d records", name, len(bySession[name]))
		}
	}
	for _, s := range p.Sessions {
		rep.Runs += verifySession(rep, s, bySession[s.Name])
	}
	verifyLedger(rep, ledger)
	verifyLedgerFences(rep, ledger)
	return *rep
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Short abbreviates a run id for the examples of a report.
func Short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	if id == "" {
		return "(none)"
	}
	return id
}

// verifySession checks one session's records and returns its runs.
func verifySession(rep *Findings, s *SessionPlan, recs []*Record) int {
	runs := map[string]*run{}
	var order []*run // by first record
	userRecs := map[string][]*Record{}
	var userOrder []string // ids by first user record
	for _, r := range recs {
		if r.Bad != "" {
			rep.add(ClassMalformed, "%s seq %d run %s: record does not decode: %s", s.Name, r.Seq, Short(r.Run), r.Bad)
			continue
		}
		ru := runs[r.Run]
		if ru == nil {
			ru = &run{id: r.Run, session: s.Name}
			runs[r.Run] = ru
			order = append(order, ru)
		}
		ru.recs = append(ru.recs, r)
		if r.Writer != "" && !slices.Contains(ru.writers, r.Writer) {
			ru.writers = append(ru.writers, r.Writer)
		}
		if r.End {
			ru.ends = append(ru.ends, r)
			continue
		}
		switch m := r.Msg.(type) {
		case *agentfleet.UserMessage:
			ru.users = append(ru.users, m.ID)
			ru.msgid = m.ID
			if len(userRecs[m.ID]) == 0 {
				userOrder = append(userOrder, m.ID)
			}
			userRecs[m.ID] = append(userRecs[m.ID], r)
		case *agentfleet.AssistantMessage:
			if len(m.ToolCalls()) == 0 {
				ru.finals++
			}
		}
	}

	// lost, duplicated user
	inPlan := map[string]bool{}
	for _, id := range s.PublishOrder() {
		inPlan[id] = true
		switch n := len(userRecs[id]); {
		case n == 0:
			rep.add(ClassLost, "%s %s: no user record", s.Name, id)
		case n > 1:
			var where []string
			for _, r := range userRecs[id] {
				where = append(where, fmt.Sprintf("seq %d run %s", r.Seq, Short(r.Run)))
			}
			rep.add(ClassDupUser, "%s %s: %d user records (%s)", s.Name, id, n, strings.Join(where, ", "))
		}
	}
	for _, id := range userOrder {
		if !inPlan[id] {
			rep.add(ClassMalformed, "%s: user record with id %q, which was never sent", s.Name, id)
		}
	}

	// reordered: user records against the publish order
	var want []string
	for _, id := range s.PublishOrder() {
		if len(userRecs[id]) > 0 {
			want = append(want, id)
		}
	}
	got := slices.DeleteFunc(slices.Clone(userOrder), func(id string) bool { return !inPlan[id] })
	if !slices.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		rep.add(ClassReordered, "%s: user record %d is %s, published order wants %s (stored %s)", s.Name, i,
			at(got, i), at(want, i), strings.Join(got, ","))
	}

	// interleaved: each run's records must be contiguous
	var segs []string
	for _, r := range recs {
		if r.Bad == "" && (len(segs) == 0 || segs[len(segs)-1] != r.Run) {
			segs = append(segs, r.Run)
		}
	}
	seen := map[string]int{}
	for i, id := range segs {
		if j, ok := seen[id]; ok && j != i-1 {
			ru := runs[id]
			between := runs[segs[i-1]]
			rep.add(ClassInterleaved, "%s run %s (%s) resumes after records of run %s (%s)", s.Name, Short(id), ru.msgid, Short(between.id), between.msgid)
		}
		seen[id] = i
	}

	for _, ru := range order {
		checkRun(rep, ru)
	}
	return len(runs)
}

func at(ids []string, i int) string {
	if i < len(ids) {
		return ids[i]
	}
	return "(nothing)"
}

// checkRun checks one run: it ended once, with the right answer, and its
// tool calls and results pair up.
func checkRun(rep *Findings, ru *run) {
	name := fmt.Sprintf("%s %s run %s", ru.session, strings.Join(ru.users, "+"), Short(ru.id))
	if len(ru.users) == 0 {
		rep.add(ClassMalformed, "%s: %d records of a run without a user message", name, len(ru.recs))
		return
	}
	if len(ru.writers) > 1 {
		rep.MultiWriterRuns++
	}
	for _, w := range ru.writers {
		if rep.RunsByWriter == nil {
			rep.RunsByWriter = map[string]int{}
		}
		rep.RunsByWriter[w]++
	}
	if len(ru.users) > 1 {
		rep.BatchedRuns++
	}
	switch {
	case len(ru.ends) == 0:
		last := ru.recs[len(ru.recs)-1]
		rep.add(ClassStuck, "%s: no run end; %d records, the last (seq %d) %s", name, len(ru.recs), last.Seq, describe(last))
	case len(ru.ends) > 1 || ru.finals > 1:
		rep.add(ClassDupEnd, "%s: %d run ends, %d final assistant messages", name, len(ru.ends), ru.finals)
	}

	// malformed: calls and results pair up
	calls := map[string]bool{}    // every call of the run's assistants so far
	var pending []string          // calls of the last assistant
	results := map[string]int{}   // results per call of the last assistant
	var texts []string            // tool result texts, in the order of the last assistant's calls
	textOf := map[string]string{} // tool result text per call of the last assistant
	var textsAtEnd [][]string     // texts as they were at each run end
	var wrong []string            // tool results whose text is not the tool's
	working := false              // an assistant or tool record came
	var cut []string              // user messages the run took after working on earlier ones
	closeTurn := func(where string) {
		for _, id := range pending {
			if n := results[id]; n != 1 {
				rep.add(ClassMalformed, "%s: tool call %s has %d results %s", name, id, n, where)
			}
		}
		pending, results = nil, map[string]int{}
	}
	for _, r := range ru.recs {
		if r.End {
			textsAtEnd = append(textsAtEnd, slices.Clone(texts))
			continue
		}
		switch m := r.Msg.(type) {
		case *agentfleet.UserMessage:
			if working {
				cut = append(cut, fmt.Sprintf("took %s (seq %d) after working on %s", m.ID, r.Seq, strings.Join(ru.users[:slices.Index(ru.users, m.ID)], "+")))
			}
			texts, wrong = nil, nil // the model answers from the last user message on
		case *agentfleet.AssistantMessage:
			working = true
			closeTurn(fmt.Sprintf("before the next assistant message (seq %d)", r.Seq))
			if len(m.ToolCalls()) > 0 {
				texts, textOf = nil, map[string]string{}
			}
			for _, c := range m.ToolCalls() {
				calls[c.ID] = true
				pending = append(pending, c.ID)
			}
		case *agentfleet.ToolResultMessage:
			working = true
			if !calls[m.ToolCallID] {
				rep.add(ClassMalformed, "%s: tool result (seq %d) for call %s, which no earlier assistant message of the run made", name, r.Seq, m.ToolCallID)
			}
			results[m.ToolCallID]++
			text := agentfleet.JoinText(m.Content)
			// Results are stored as each call ends; the model sees them
			// in the order of the calls.
			textOf[m.ToolCallID] = text
			texts = texts[:0]
			for _, id := range pending {
				if t, ok := textOf[id]; ok {
					texts = append(texts, t)
				}
			}
			if want := expectedAsk(m.ToolName, ru.msgid); !m.IsError && want != "" && !strings.HasPrefix(text, want) {
				wrong = append(wrong, fmt.Sprintf("%s result %q, want the child's answer %q…", m.ToolName, clip(text), want))
			}
			if !m.IsError {
				if want := expectedResult(m.ToolName, ru.msgid); want != "" && text != want {
					wrong = append(wrong, fmt.Sprintf("%s result %q, want %q", m.ToolName, text, want))
				}
			}
		}
	}
	closeTurn("by the end of the run")

	// wrong answer
	if len(cut) > 0 {
		// The earlier messages never get an answer of their own.
		rep.add(ClassWrongAnswer, "%s: cut short: %s", name, strings.Join(cut, "; "))
		return
	}
	// The first run end is checked against the results stored before it;
	// further ends are duplicated_end already.
	if len(ru.ends) > 0 {
		e := ru.ends[0]
		want := model.AnswerText(ru.msgid, textsAtEnd[0])
		got := agentfleet.JoinText(e.Final.Content)
		if got != want || e.Final.StopReason != agentfleet.StopReasonStop {
			rep.add(ClassWrongAnswer, "%s: final (seq %d, %s) %q, want %q", name, e.Seq, e.Final.StopReason, clip(got), clip(want))
			return
		}
	}
	if len(ru.ends) > 0 && len(wrong) > 0 {
		rep.add(ClassWrongAnswer, "%s: %s", name, strings.Join(wrong, "; "))
	}
}

// expectedResult is the text a successful call of tool gives in the run of
// msgid, "" when the harness does not know.
func expectedResult(tool, msgid string) string {
	switch tool {
	case model.ToolEcho:
		return msgid
	case model.ToolSleep:
		return fmt.Sprintf("slept %d ms", model.SleepMS(msgid))
	case model.ToolLedger:
		return "ledger " + msgid
	}
	return ""
}

func describe(r *Record) string {
	if r.End {
		return "run end"
	}
	switch m := r.Msg.(type) {
	case *agentfleet.UserMessage:
		return "user " + m.ID
	case *agentfleet.AssistantMessage:
		if n := len(m.ToolCalls()); n > 0 {
			return fmt.Sprintf("assistant with %d tool calls", n)
		}
		return "assistant " + clip(agentfleet.JoinText(m.Content))
	case *agentfleet.ToolResultMessage:
		return "tool result " + m.ToolCallID
	}
	return "?"
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:157] + "..."
	}
	return s
}

// verifyLedger checks that no ledger call ran twice.
func verifyLedger(rep *Findings, ledger []LedgerRecord) {
	count := map[string][]uint64{}
	var order []string
	for _, l := range ledger {
		if len(count[l.Call]) == 0 {
			order = append(order, l.Call)
		}
		count[l.Call] = append(count[l.Call], l.Seq)
	}
	for _, id := range order {
		if seqs := count[id]; len(seqs) > 1 {
			rep.add(ClassLedgerTwice, "ledger call %s executed %d times (ledger seqs %v)", id, len(seqs), seqs)
		}
	}
}
