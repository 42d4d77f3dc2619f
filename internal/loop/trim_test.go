package loop_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// trimmer is a store that, at the end of each run, drops the runs named
// by cut (a store's history bounds) and says so to the loop.
type trimmer struct {
	storeFuncs
	cut func(final *agentfleet.AssistantMessage) (loop.Trim, bool)
}

func (s trimmer) TrimAfter(final *agentfleet.AssistantMessage) (loop.Trim, bool) { return s.cut(final) }

// TestTrimAfterRunEnd resumes a session of two runs (packed, as an idle
// session is) and has its store cut the first when the next run ends:
// the session drops that run's messages from memory, and takes the
// store's summary; the run after sends the rest.
func TestTrimAfterRunEnd(t *testing.T) {
	hist := []loop.Entry{
		{RunID: "r1", Message: agentfleet.NewUserMessage("q1")}, {RunID: "r1", Message: answer("a1")},
		{RunID: "r2", Message: agentfleet.NewUserMessage("q2")}, {RunID: "r2", Message: answer("a2")},
	}
	cuts := 0
	store := trimmer{cut: func(final *agentfleet.AssistantMessage) (loop.Trim, bool) {
		cuts++
		if cuts > 1 {
			return loop.Trim{}, false
		}
		return loop.Trim{Runs: map[string]bool{"r1": true}, Summary: &agentfleet.ContextSummary{Covers: 0, Text: "r1 in short"}}, true
	}}
	m := &script{steps: []step{say("a3"), say("a4")}}
	s, _ := newSession(t, m, loop.Config{History: hist, Store: store})
	<-s.Send(agentfleet.NewUserMessage("q3"))
	if got := roles(s.History()); got != "user:q2 assistant user:q3 assistant" {
		t.Fatalf("after the cut the session holds %s", got)
	}
	<-s.Send(agentfleet.NewUserMessage("q4"))
	if got := roles(m.request(1).Messages); got != "user:q2 assistant user:q3 assistant user:q4" {
		t.Errorf("the run after the cut sends %s", got)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
