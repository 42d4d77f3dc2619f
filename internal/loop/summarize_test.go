package loop_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/window"
)

// TestSummarizeReplacesOldTurns has a session of the summarize strategy
// with a long history: the model is asked for a summary of the oldest
// turns (all but the recent ones that fill half the budget), the store gets
// it, and the request sends the summary in their place; the next run
// reuses it without another summary.
func TestSummarizeReplacesOldTurns(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.TextReply("SUMMARY of twenty turns").Response(), llmtest.TextReply("one").Response(), llmtest.TextReply("two").Response())
	hist := longHistory(20, 400)
	var stored []*agentfleet.ContextSummary
	s, ev := llmSession(t, srv, loop.Config{History: hist, Context: window.Policy{Strategy: window.StrategySummarize, Window: 4000, ReserveOutput: 500},
		Store: storeFuncs{summary: func(runID string, sum *agentfleet.ContextSummary) error {
			stored = append(stored, sum)
			return nil
		}}})
	if final := wait(t, s.Send(agentfleet.NewUserMessage("first"))); agentfleet.JoinText(final.Content) != "one" {
		t.Fatalf("first run: %q %s (%s)", agentfleet.JoinText(final.Content), final.StopReason, final.ErrorMessage)
	}
	if final := wait(t, s.Send(agentfleet.NewUserMessage("second"))); agentfleet.JoinText(final.Content) != "two" {
		t.Fatalf("second run: %q %s (%s)", agentfleet.JoinText(final.Content), final.StopReason, final.ErrorMessage)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].Messages[0].Text() != window.SummaryPrompt {
		t.Fatalf("%d requests, the first with system prompt %.40q; want a summary, then two answers", len(reqs), reqs[0].Messages[0].Text())
	}
	if len(stored) != 1 || stored[0].Covers <= len(hist)/2 || stored[0].Covers >= len(hist) || stored[0].Covers%5 != 0 {
		t.Fatalf("stored summaries %+v, want one covering whole turns, most of the %d messages before the run", stored, len(hist))
	}
	covers := stored[0].Covers
	for i, r := range reqs[1:] {
		if got := r.Messages[1].Text(); got != window.SummaryLead+"SUMMARY of twenty turns" {
			t.Errorf("request %d begins with %.60q, want the summary", i+2, got)
		}
		checkWirePairs(t, r)
	}
	if got, want := len(reqs[2].Messages), 1+1+len(hist)-covers+2+1; got != want { // system, summary, recent turns, first run, second
		t.Errorf("the second run sends %d messages, want %d", got, want)
	}
	if cs := eventsOf(ev, agentfleet.EventContextCompacted); len(cs) != 1 || cs[0].Strategy != window.StrategySummarize || cs[0].DroppedMessages != covers {
		t.Errorf("context.compacted %+v, want one summarize event", cs)
	}
}

// TestSummaryFailureFallsBackToTruncate has the summary request fail: an
// error event says so, and the run goes on with the truncated history.
func TestSummaryFailureFallsBackToTruncate(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Error(500, ""), llmtest.TextReply("fine").Response())
	s, ev := llmSession(t, srv, loop.Config{History: longHistory(20, 400), Context: window.Policy{Strategy: window.StrategySummarize, Window: 4000, ReserveOutput: 500}})
	if final := wait(t, s.Send(agentfleet.NewUserMessage("go"))); final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("%s (%s)", final.StopReason, final.ErrorMessage)
	}
	errs := eventsOf(ev, agentfleet.EventError)
	if len(errs) != 1 || !strings.Contains(errs[0].ErrorMessage, "context summary not written") {
		t.Errorf("error events %+v", errs)
	}
	cs := eventsOf(ev, agentfleet.EventContextCompacted)
	if len(cs) != 1 || cs[0].Strategy != window.StrategyTruncate {
		t.Errorf("context.compacted %+v, want one truncate event", cs)
	}
	checkWirePairs(t, srv.Requests()[1])
}
