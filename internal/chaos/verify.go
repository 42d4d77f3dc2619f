package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/nats-io/nats.go/jetstream"
)

// record is one stored history record.
type record struct {
	seq     uint64
	time    time.Time
	session string
	run     string
	writer  string
	end     bool
	msg     agentfleet.Message           // nil for a run end
	final   *agentfleet.AssistantMessage // a run end's final message
	bad     string                       // why it did not decode
}

// ledgerRecord is one stored execution of the ledger tool.
type ledgerRecord struct {
	seq  uint64
	call string
	arg  string
}

// readStream reads every message of stream on subject filter with an
// ordered consumer, calling each for each.
func readStream(ctx context.Context, js jetstream.JetStream, stream, filter string, each func(jetstream.Msg) error) error {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
	}
	total := info.NumPending
	for got := uint64(0); got < total; {
		batch, err := cons.Fetch(int(min(total-got, 1024)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			got++
			if err := each(m); err != nil {
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		if n == 0 {
			return fmt.Errorf("read %s: %d of %d messages arrived", stream, got, total)
		}
	}
	return nil
}

// readHistory reads every record of the sessions of agent "default",
// whichever orchestrator wrote it.
func readHistory(ctx context.Context, js jetstream.JetStream) ([]*record, error) {
	prefix := "agent.history." + agentName + "."
	var recs []*record
	err := readStream(ctx, js, historyStream, prefix+">", func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("history record: %w", err)
		}
		r := &record{
			seq: meta.Sequence.Stream, time: meta.Timestamp,
			session: strings.TrimPrefix(m.Subject(), prefix),
			run:     m.Headers().Get(toolrpc.HeaderRunID), writer: m.Headers().Get(history.HeaderWriter),
			end: m.Headers().Get(history.HeaderRecord) == history.RecordRunEnd,
		}
		if r.end {
			r.final = new(agentfleet.AssistantMessage)
			if err := json.Unmarshal(m.Data(), r.final); err != nil {
				r.bad = err.Error()
			}
		} else if r.msg, err = agentfleet.UnmarshalMessage(m.Data()); err != nil {
			r.bad = err.Error()
		}
		recs = append(recs, r)
		return nil
	})
	return recs, err
}

// readLedger reads every execution of the ledger tool.
func readLedger(ctx context.Context, js jetstream.JetStream) ([]ledgerRecord, error) {
	var recs []ledgerRecord
	err := readStream(ctx, js, LedgerStream, LedgerSubject, func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("ledger record: %w", err)
		}
		recs = append(recs, ledgerRecord{seq: meta.Sequence.Stream, call: m.Headers().Get(HeaderLedgerCall), arg: m.Headers().Get(HeaderLedgerArg)})
		return nil
	})
	return recs, err
}

// answered reports whether every message of the plan has a stored user
// record whose run has ended, and how many do not.
func answered(p *plan, recs []*record) (bool, int) {
	runOf := map[string]string{} // session/id -> run
	ended := map[string]bool{}   // session/run
	for _, r := range recs {
		if r.end {
			ended[r.session+"/"+r.run] = true
		} else if u, ok := r.msg.(*agentfleet.UserMessage); ok {
			if _, seen := runOf[r.session+"/"+u.ID]; !seen {
				runOf[r.session+"/"+u.ID] = r.run
			}
		}
	}
	missing := 0
	for _, s := range p.sessions {
		for _, m := range s.messages {
			run, ok := runOf[s.name+"/"+m.id]
			if !ok || !ended[s.name+"/"+run] {
				missing++
			}
		}
	}
	return missing == 0, missing
}

// quiesce waits, up to timeout and restarting processes that exit on their
// own, until every message of the plan has a run that ended in the stored
// history. It reports whether that happened; the error says why not.
func (f *fleet) quiesce(ctx context.Context, js jetstream.JetStream, p *plan, timeout time.Duration) (bool, error) {
	since := time.Now()
	missing := -1
	var last time.Time
	err := proc.WaitFor(ctx, timeout, "every message to have a run that ended", func() (bool, error) {
		if err := f.supervise(ctx, since); err != nil {
			return false, err
		}
		if time.Since(last) < 500*time.Millisecond {
			return false, nil
		}
		last = time.Now()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		recs, err := readHistory(rctx, js)
		cancel()
		if err != nil {
			return false, err
		}
		var done bool
		done, missing = answered(p, recs)
		if !done {
			return false, fmt.Errorf("%d messages have no ended run", missing)
		}
		return true, nil
	})
	if err != nil {
		return false, err
	}
	f.cfg.Logf("chaos: quiesced in %v", time.Since(since).Round(time.Millisecond))
	return true, nil
}

// run is what the history holds of one run.
type run struct {
	id, session string
	// msgid is the id of the run's last user message, the one the model
	// answers; users are the ids of all its user messages, in order. A run
	// takes every message queued when it starts (loop.Session), so it may
	// have several.
	msgid   string
	users   []string
	recs    []*record
	ends    []*record
	finals  int // assistant messages without tool calls
	writers []string
}

// verify checks the stored history and ledger against the plan.
func verify(p *plan, recs []*record, ledger []ledgerRecord) *Report {
	rep := newReport()
	rep.Sessions = len(p.sessions)
	rep.Messages, rep.Duplicates = p.count()
	rep.Records = len(recs)
	rep.LedgerExecutions = len(ledger)
	bySession := map[string][]*record{}
	writers := map[string]bool{}
	for _, r := range recs {
		bySession[r.session] = append(bySession[r.session], r)
		if r.writer != "" {
			writers[r.writer] = true
		}
	}
	for w := range writers {
		rep.Writers = append(rep.Writers, w)
	}
	slices.Sort(rep.Writers)
	planned := map[string]*sessionPlan{}
	for _, s := range p.sessions {
		planned[s.name] = s
	}
	for _, name := range sortedKeys(bySession) {
		if planned[name] == nil {
			rep.add(ClassMalformed, "session %s: not in the plan, yet %d records", name, len(bySession[name]))
		}
	}
	for _, s := range p.sessions {
		rep.Runs += verifySession(rep, s, bySession[s.name])
	}
	verifyLedger(rep, ledger)
	return rep
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// short abbreviates a run id for examples.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	if id == "" {
		return "(none)"
	}
	return id
}

// verifySession checks one session's records and returns its runs.
func verifySession(rep *Report, s *sessionPlan, recs []*record) int {
	runs := map[string]*run{}
	var order []*run // by first record
	userRecs := map[string][]*record{}
	var userOrder []string // ids by first user record
	for _, r := range recs {
		if r.bad != "" {
			rep.add(ClassMalformed, "%s seq %d run %s: record does not decode: %s", s.name, r.seq, short(r.run), r.bad)
			continue
		}
		ru := runs[r.run]
		if ru == nil {
			ru = &run{id: r.run, session: s.name}
			runs[r.run] = ru
			order = append(order, ru)
		}
		ru.recs = append(ru.recs, r)
		if r.writer != "" && !slices.Contains(ru.writers, r.writer) {
			ru.writers = append(ru.writers, r.writer)
		}
		if r.end {
			ru.ends = append(ru.ends, r)
			continue
		}
		switch m := r.msg.(type) {
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
	for _, id := range s.publishOrder() {
		inPlan[id] = true
		switch n := len(userRecs[id]); {
		case n == 0:
			rep.add(ClassLost, "%s %s: no user record", s.name, id)
		case n > 1:
			var where []string
			for _, r := range userRecs[id] {
				where = append(where, fmt.Sprintf("seq %d run %s", r.seq, short(r.run)))
			}
			rep.add(ClassDupUser, "%s %s: %d user records (%s)", s.name, id, n, strings.Join(where, ", "))
		}
	}
	for _, id := range userOrder {
		if !inPlan[id] {
			rep.add(ClassMalformed, "%s: user record with id %q, which was never sent", s.name, id)
		}
	}

	// reordered: user records against the publish order
	var want []string
	for _, id := range s.publishOrder() {
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
		rep.add(ClassReordered, "%s: user record %d is %s, published order wants %s (stored %s)", s.name, i,
			at(got, i), at(want, i), strings.Join(got, ","))
	}

	// interleaved: each run's records must be contiguous
	var segs []string
	for _, r := range recs {
		if r.bad == "" && (len(segs) == 0 || segs[len(segs)-1] != r.run) {
			segs = append(segs, r.run)
		}
	}
	seen := map[string]int{}
	for i, id := range segs {
		if j, ok := seen[id]; ok && j != i-1 {
			ru := runs[id]
			between := runs[segs[i-1]]
			rep.add(ClassInterleaved, "%s run %s (%s) resumes after records of run %s (%s)", s.name, short(id), ru.msgid, short(between.id), between.msgid)
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
func checkRun(rep *Report, ru *run) {
	name := fmt.Sprintf("%s %s run %s", ru.session, strings.Join(ru.users, "+"), short(ru.id))
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
		rep.add(ClassStuck, "%s: no run end; %d records, the last (seq %d) %s", name, len(ru.recs), last.seq, describe(last))
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
		if r.end {
			textsAtEnd = append(textsAtEnd, slices.Clone(texts))
			continue
		}
		switch m := r.msg.(type) {
		case *agentfleet.UserMessage:
			if working {
				cut = append(cut, fmt.Sprintf("took %s (seq %d) after working on %s", m.ID, r.seq, strings.Join(ru.users[:slices.Index(ru.users, m.ID)], "+")))
			}
			texts, wrong = nil, nil // the model answers from the last user message on
		case *agentfleet.AssistantMessage:
			working = true
			closeTurn(fmt.Sprintf("before the next assistant message (seq %d)", r.seq))
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
				rep.add(ClassMalformed, "%s: tool result (seq %d) for call %s, which no earlier assistant message of the run made", name, r.seq, m.ToolCallID)
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
		got := agentfleet.JoinText(e.final.Content)
		if got != want || e.final.StopReason != agentfleet.StopReasonStop {
			rep.add(ClassWrongAnswer, "%s: final (seq %d, %s) %q, want %q", name, e.seq, e.final.StopReason, clip(got), clip(want))
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

func describe(r *record) string {
	if r.end {
		return "run end"
	}
	switch m := r.msg.(type) {
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
func verifyLedger(rep *Report, ledger []ledgerRecord) {
	count := map[string][]uint64{}
	var order []string
	for _, l := range ledger {
		if len(count[l.call]) == 0 {
			order = append(order, l.call)
		}
		count[l.call] = append(count[l.call], l.seq)
	}
	for _, id := range order {
		if seqs := count[id]; len(seqs) > 1 {
			rep.add(ClassLedgerTwice, "ledger call %s executed %d times (ledger seqs %v)", id, len(seqs), seqs)
		}
	}
}
