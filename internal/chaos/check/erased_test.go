package check

import (
	"testing"

	"github.com/agentfleet/agentfleet"
)

func TestVerifyErased(t *testing.T) {
	plan := &ErasedPlan{Name: "x00", Before: []*Message{{ID: "b1"}, {ID: "b2"}}, After: &Message{ID: "a1"}}
	user := func(seq uint64, run, id string) *Record {
		return &Record{Seq: seq, Session: "x00", Run: run, Msg: &agentfleet.UserMessage{ID: id}}
	}
	end := func(seq uint64, run string) *Record {
		return &Record{Seq: seq, Session: "x00", Run: run, End: true, Final: &agentfleet.AssistantMessage{}}
	}
	clean := []*Record{user(5, "r-after", "a1"), end(6, "r-after")}
	for _, tt := range []struct {
		name  string
		state *ErasedState
		want  int
	}{
		{"only the run after the delete", &ErasedState{Deleted: true, History: clean, Events: []StoredEvent{{Seq: 1, Type: "run.start", Run: "r-after"}, {Seq: 2, Type: "error"}}, Input: []string{"a1"}}, 0},
		{"nothing stored at all", &ErasedState{Deleted: true}, 0},
		{"delete never answered", &ErasedState{Deleted: false, History: clean}, 1},
		{"no state", nil, 1},
		{"a message from before the delete", &ErasedState{Deleted: true, History: append([]*Record{user(2, "r-old", "b1")}, clean...)}, 1},
		{"a run end of a run from before", &ErasedState{Deleted: true, History: append([]*Record{end(3, "r-old")}, clean...)}, 1},
		{"a message from before taken into the run after", &ErasedState{Deleted: true, History: []*Record{user(5, "r-after", "b2"), user(5, "r-after", "a1"), end(6, "r-after")}}, 1},
		{"an event of a run from before", &ErasedState{Deleted: true, History: clean, Events: []StoredEvent{{Seq: 9, Type: "tool.end", Run: "r-old"}}}, 1},
		{"stored input from before", &ErasedState{Deleted: true, History: clean, Input: []string{"b2", "a1"}}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var f Findings
			states := map[string]*ErasedState{}
			if tt.state != nil {
				states["x00"] = tt.state
			}
			f.VerifyErased([]*ErasedPlan{plan}, states)
			if got := f.Count(ClassErased); got != tt.want {
				t.Errorf("%d violations, want %d: %v", got, tt.want, f.Violations)
			}
		})
	}
}

func TestAfterRecords(t *testing.T) {
	plan := &ErasedPlan{Name: "x00", After: &Message{ID: "a1"}}
	recs := []*Record{
		{Seq: 1, Run: "old", Msg: &agentfleet.UserMessage{ID: "b1"}},
		{Seq: 2, Run: "new", Msg: &agentfleet.UserMessage{ID: "a1"}},
		{Seq: 3, Run: "new", End: true},
		{Seq: 4, Run: "old", End: true},
	}
	got := AfterRecords(plan, recs)
	if len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 3 {
		t.Errorf("after records %v, want seqs 2 and 3", got)
	}
	if p := ErasedSessionPlan(plan); p.Name != "x00" || len(p.Messages) != 1 || p.Messages[0].ID != "a1" {
		t.Errorf("plan %+v", p)
	}
}
