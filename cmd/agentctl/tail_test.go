package main

import (
	"testing"

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
	} {
		if got := eventDetail(&c.e); got != c.want {
			t.Errorf("eventDetail(%s) = %q, want %q", c.e.Type, got, c.want)
		}
	}
}
