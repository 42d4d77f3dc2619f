package check

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
)

// testPlan is two sessions: s00 sends a then b, s01 sends c.
func testPlan() *Plan {
	return &Plan{Sessions: []*SessionPlan{
		{Name: "s00", Messages: []*Message{{ID: "a", Session: "s00"}, {ID: "b", Session: "s00"}}},
		{Name: "s01", Messages: []*Message{{ID: "c", Session: "s01"}}},
	}}
}

// resultOf is what the worker's tool gives for call c of the run of msgid.
func resultOf(c model.PlannedCall, msgid string) string {
	switch c.Name {
	case model.ToolEcho:
		return msgid
	case model.ToolSleep:
		return fmt.Sprintf("slept %d ms", model.SleepMS(msgid))
	}
	return "ledger " + msgid
}

// goodRun is the records a correct run of msgid stores, as the model and
// the tools answer it: the user message, the assistant's calls, their
// results, the final answer and the run end; and the ledger executions.
func goodRun(session, run, msgid string) ([]*Record, []LedgerRecord) {
	rec := func(m agentfleet.Message) *Record {
		return &Record{Session: session, Run: run, Writer: "o1", Msg: m}
	}
	recs := []*Record{rec(&agentfleet.UserMessage{ID: msgid, Content: []agentfleet.Content{agentfleet.Text("task " + msgid)}})}
	calls := model.PlannedCalls(msgid)
	asked := &agentfleet.AssistantMessage{StopReason: agentfleet.StopReasonToolUse}
	for _, c := range calls {
		asked.Content = append(asked.Content, agentfleet.Content{Type: agentfleet.ContentToolCall, ID: c.ID, Name: c.Name, Arguments: []byte(c.Args)})
	}
	recs = append(recs, rec(asked))
	var results []string
	var ledger []LedgerRecord
	for _, c := range calls {
		text := resultOf(c, msgid)
		results = append(results, text)
		recs = append(recs, rec(&agentfleet.ToolResultMessage{ToolCallID: c.ID, ToolName: c.Name, Content: []agentfleet.Content{agentfleet.Text(text)}}))
		if c.Name == model.ToolLedger {
			ledger = append(ledger, LedgerRecord{Call: c.ID, Arg: msgid})
		}
	}
	final := &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text(model.AnswerText(msgid, results))}, StopReason: agentfleet.StopReasonStop}
	recs = append(recs, rec(final), &Record{Session: session, Run: run, Writer: "o1", End: true, Final: final})
	return recs, ledger
}

// history is the records and ledger of correct runs of a, b and c, one
// run each, in order.
func history() (a, b, c []*Record, ledger []LedgerRecord) {
	a, la := goodRun("s00", "run-a", "a")
	b, lb := goodRun("s00", "run-b", "b")
	c, lc := goodRun("s01", "run-c", "c")
	return a, b, c, slices.Concat(la, lb, lc)
}

// numbered gives the records their stream sequences, in order.
func numbered(recs []*Record) []*Record {
	for i, r := range recs {
		r.Seq = uint64(i + 1)
	}
	return recs
}

func TestVerify(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func() ([]*Record, []LedgerRecord)
		want  map[Class]int
	}{
		{"every message answered once, in order", func() ([]*Record, []LedgerRecord) {
			a, b, c, l := history()
			return slices.Concat(a, b, c), l
		}, nil},
		{"a message without a user record is lost", func() ([]*Record, []LedgerRecord) {
			a, _, c, l := history()
			return slices.Concat(a, c), l
		}, map[Class]int{ClassLost: 1}},
		{"a message taken by two runs is duplicated", func() ([]*Record, []LedgerRecord) {
			a, b, c, l := history()
			again, _ := goodRun("s00", "run-a2", "a")
			return slices.Concat(a, again, b, c), l
		}, map[Class]int{ClassDupUser: 1}},
		{"a run without its end is stuck", func() ([]*Record, []LedgerRecord) {
			a, b, c, l := history()
			return slices.Concat(a[:len(a)-1], b, c), l
		}, map[Class]int{ClassStuck: 1}},
		{"a run that ended twice", func() ([]*Record, []LedgerRecord) {
			a, b, c, l := history()
			end := *a[len(a)-1]
			return slices.Concat(a, []*Record{&end}, b, c), l
		}, map[Class]int{ClassDupEnd: 1}},
		{"user records out of publish order", func() ([]*Record, []LedgerRecord) {
			a, b, c, l := history()
			return slices.Concat(b, a, c), l
		}, map[Class]int{ClassReordered: 1}},
		{"a run resumed after another run's records", func() ([]*Record, []LedgerRecord) {
			a, b, c, l := history()
			return slices.Concat(a[:2], b, a[2:], c), l
		}, map[Class]int{ClassInterleaved: 1}},
		{"a final answer not built from the run's results", func() ([]*Record, []LedgerRecord) {
			a, b, c, l := history()
			wrong := &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text("answer a: nothing")}, StopReason: agentfleet.StopReasonStop}
			a[len(a)-1] = &Record{Session: "s00", Run: "run-a", End: true, Final: wrong}
			return slices.Concat(a, b, c), l
		}, map[Class]int{ClassWrongAnswer: 1}},
		{"a tool result for a call nobody made", func() ([]*Record, []LedgerRecord) {
			a, b, c, l := history()
			stray := &Record{Session: "s01", Run: "run-c", Msg: &agentfleet.ToolResultMessage{ToolCallID: "call_nobody", ToolName: model.ToolEcho, IsError: true}}
			return slices.Concat(a, b, c[:len(c)-2], []*Record{stray}, c[len(c)-2:]), l
		}, map[Class]int{ClassMalformed: 1}},
		{"a record that does not decode", func() ([]*Record, []LedgerRecord) {
			a, b, c, l := history()
			return slices.Concat(a, b, c, []*Record{{Session: "s01", Run: "run-c", Bad: "unexpected end of JSON input"}}), l
		}, map[Class]int{ClassMalformed: 1}},
		{"a ledger call executed twice", func() ([]*Record, []LedgerRecord) {
			a, b, c, _ := history()
			return slices.Concat(a, b, c), []LedgerRecord{{Seq: 1, Call: "call_x_2", Arg: "x"}, {Seq: 2, Call: "call_x_2", Arg: "x"}}
		}, map[Class]int{ClassLedgerTwice: 1}},
		{"ledger calls of one partition's owners in epoch order", func() ([]*Record, []LedgerRecord) {
			a, b, c, _ := history()
			return slices.Concat(a, b, c), []LedgerRecord{
				{Seq: 1, Call: "call_x_1", Partition: 3, Epoch: 10, Owner: "o1"},
				{Seq: 2, Call: "call_y_1", Partition: 4, Epoch: 2, Owner: "o1"}, // another partition
				{Seq: 3, Call: "call_x_2", Partition: 3, Epoch: 12, Owner: "o2"},
				{Seq: 4, Call: "call_x_3", Partition: 3, Epoch: 12, Owner: "o2"},
				{Seq: 5, Call: "call_z_1"}, // no fence
			}
		}, map[Class]int{}},
		{"a ledger call of a deposed owner", func() ([]*Record, []LedgerRecord) {
			a, b, c, _ := history()
			return slices.Concat(a, b, c), []LedgerRecord{
				{Seq: 1, Call: "call_x_1", Partition: 3, Epoch: 10, Owner: "o1"},
				{Seq: 2, Call: "call_x_2", Partition: 3, Epoch: 12, Owner: "o2"},
				{Seq: 3, Call: "call_x_3", Partition: 3, Epoch: 10, Owner: "o1"},
			}
		}, map[Class]int{ClassLedgerDeposed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, ledger := tc.build()
			f := Verify(testPlan(), numbered(recs), ledger)
			got := map[Class]int{}
			for _, v := range f.Violations {
				if v.Count > 0 {
					got[v.Class] = v.Count
				}
			}
			if want := tc.want; !maps.Equal(got, want) {
				t.Errorf("violations %v, want %v; examples: %v", got, want, examples(f))
			}
			if got, want := f.Total(), sum(tc.want); got != want {
				t.Errorf("Total() = %d, want %d", got, want)
			}
			if want := fenced(ledger); f.LedgerFenced != want {
				t.Errorf("LedgerFenced = %d, want %d", f.LedgerFenced, want)
			}
			if got, want := f.Messages, 3; got != want {
				t.Errorf("Messages = %d, want %d", got, want)
			}
		})
	}
}

func fenced(ledger []LedgerRecord) int {
	n := 0
	for _, l := range ledger {
		if l.Epoch != 0 {
			n++
		}
	}
	return n
}

func sum(m map[Class]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func examples(f Findings) []string {
	var ex []string
	for _, v := range f.Violations {
		ex = append(ex, v.Examples...)
	}
	return ex
}

func TestAnswered(t *testing.T) {
	a, b, c, _ := history()
	for _, tc := range []struct {
		name    string
		recs    []*Record
		done    bool
		missing int
	}{
		{"every run ended", slices.Concat(a, b, c), true, 0},
		{"a run without its end", slices.Concat(a, b[:len(b)-1], c), false, 1},
		{"a message never taken", slices.Concat(a, b), false, 1},
		{"nothing stored", nil, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, missing := Answered(testPlan(), tc.recs)
			if done != tc.done || missing != tc.missing {
				t.Errorf("Answered = %v, %d; want %v, %d", done, missing, tc.done, tc.missing)
			}
		})
	}
}
