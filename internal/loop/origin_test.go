package loop_test

import (
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// TestRunCarriesItsParent: every event of a run whose message names a
// parent carries it, run.start and run.end included; a run resumed from the
// history finds it on its stored message; a client's run has none.
func TestRunCarriesItsParent(t *testing.T) {
	parent := &agentfleet.Parent{Agent: "boss", Session: "s", RunID: "r", ToolCallID: "c", Chain: []string{"boss"}}
	child := agentfleet.NewUserMessage("child")
	child.Parent = parent
	check := func(t *testing.T, evs []agentfleet.Event, want *agentfleet.Parent) {
		t.Helper()
		if len(evs) < 2 {
			t.Fatalf("%d events", len(evs))
		}
		for _, e := range evs {
			if e.Parent != want {
				t.Errorf("%s has parent %+v, want %+v", e.Type, e.Parent, want)
			}
		}
	}
	t.Run("new run", func(t *testing.T) {
		s, ev := newSession(t, &script{steps: []step{say("a")}}, loop.Config{})
		wait(t, s.Send(child))
		check(t, ev.list(), parent)
	})
	t.Run("resumed run", func(t *testing.T) {
		s, ev := newSession(t, &script{steps: []step{say("a")}}, loop.Config{History: entries("run-1", child)})
		wait(t, s.Resume("run-1"))
		evs := ev.list()
		if evs[0].Type != agentfleet.EventRunResumed {
			t.Errorf("first event %s, want run.resumed", evs[0].Type)
		}
		check(t, evs, parent)
	})
	t.Run("client's run", func(t *testing.T) {
		s, ev := newSession(t, &script{steps: []step{say("a")}}, loop.Config{})
		wait(t, s.Send(agentfleet.NewUserMessage("client")))
		check(t, ev.list(), nil)
	})
}
