package main

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

func TestEventDetailOfContextAndBudget(t *testing.T) {
	for _, c := range []struct {
		e    agentfleet.Event
		want string
	}{
		{agentfleet.Event{Type: agentfleet.EventContextCompacted, Strategy: "truncate", Reason: "window", DroppedTurns: 2, DroppedMessages: 9, ShortenedResults: 1, TokensBefore: 9000, TokensAfter: 3000},
			"truncate (window): 2 turn(s), 9 message(s) left out, 1 result(s) shortened, ~9000 → ~3000 tokens"},
		{agentfleet.Event{Type: agentfleet.EventBudgetExceeded, Budget: "max_tokens_per_run", Limit: 200, Used: 220}, "max_tokens_per_run: 220 of 200"},
		{agentfleet.Event{Type: agentfleet.EventSessionHandoff, From: "support", To: "billing", Reason: "a refund"}, `support → billing: "a refund"`},
	} {
		if got := eventDetail(&c.e); got != c.want {
			t.Errorf("eventDetail(%s) = %q, want %q", c.e.Type, got, c.want)
		}
	}
}

// TestFormatEventOfChildRun: a child run's events are indented by its
// depth, and its start names the call that asked it.
func TestFormatEventOfChildRun(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.Local)
	parent := &agentfleet.Parent{Agent: "boss", Session: "s1", RunID: "r1", ToolCallID: "call_1", Chain: []string{"lead", "boss"}}
	for _, c := range []struct {
		e    agentfleet.Event
		want string
	}{
		{agentfleet.Event{Type: agentfleet.EventRunStart, Agent: "boss", Session: "s1", Time: at}, "03:04:05.006 boss/s1 run.start"},
		{agentfleet.Event{Type: agentfleet.EventRunStart, Agent: "researcher", Session: "d-1", Time: at, Parent: parent},
			"03:04:05.006     researcher/d-1 run.start asked by boss/s1 call call_1"},
		{agentfleet.Event{Type: agentfleet.EventTurnStart, Agent: "researcher", Session: "d-1", Turn: 1, Time: at, Parent: parent},
			"03:04:05.006     researcher/d-1 turn.start turn 1"},
	} {
		if got := formatEvent(&c.e, at); got != c.want {
			t.Errorf("formatEvent = %q, want %q", got, c.want)
		}
	}
}
