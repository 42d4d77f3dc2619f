package orchestrator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/window"
)

// TestSummaryIsStoredAndReusedAfterRestart runs a durable session of a
// summarize profile through a real model client, NATS and JetStream: once
// the history fills three quarters of the window, the model is asked for a
// summary, which is stored as one record of the session's history and sent
// in place of the turns it covers; after a restart the next run sends the
// stored summary without asking for another.
func TestSummaryIsStoredAndReusedAfterRestart(t *testing.T) {
	profiles, err := orchestrator.ParseProfiles([]byte(`
agents:
  - name: sum
    context_window: 2000
    reserve_output: 200
    context_strategy: summarize
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.TextReply("a1").Response(), llmtest.TextReply("a2").Response(),
		llmtest.TextReply("SUMMARY-1 the user asked three long questions").Response(), llmtest.TextReply("a3").Response(),
		llmtest.TextReply("a4").Response())
	client, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := startFleet(t, orchestrator.Config{Model: client, Profiles: profiles, Durable: true})
	question := func(i int) string { return fmt.Sprintf("question %d %s", i, strings.Repeat("w ", 1000)) }
	for i := 1; i <= 3; i++ {
		if final := f.ask(t, "sum", "s", question(i)); final.StopReason != agentfleet.StopReasonStop {
			t.Fatalf("run %d: %s (%s)", i, final.StopReason, final.ErrorMessage)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4 (three answers and a summary)", len(reqs))
	}
	if got := reqs[2].Messages[0].Text(); got != window.SummaryPrompt {
		t.Errorf("third request's system prompt %q, want the summary prompt", got)
	}
	if !strings.Contains(reqs[2].Messages[1].Text(), "question 1") || !strings.Contains(reqs[2].Messages[1].Text(), "assistant: a2") {
		t.Errorf("the summary request does not hold the earlier turns")
	}
	answer3 := string(reqs[3].Body)
	if !strings.Contains(answer3, "SUMMARY-1") || strings.Contains(answer3, "question 1") || !strings.Contains(answer3, "question 3") {
		t.Errorf("the request after the summary does not send the summary and the current run only: %.300s", answer3)
	}
	c := f.events.wait(t, "context.compacted", isType(agentfleet.EventContextCompacted))
	if c.Strategy != "summarize" || c.DroppedMessages != 4 || c.TokensAfter >= c.TokensBefore {
		t.Errorf("context.compacted %+v, want four messages summarized", c)
	}
	summaries := func() []*agentfleet.ContextSummary {
		var out []*agentfleet.ContextSummary
		for _, r := range loadHistory(t, f.nc, "sum", "s").Records {
			if r.Summary != nil {
				out = append(out, r.Summary)
			}
		}
		return out
	}
	if ss := summaries(); len(ss) != 1 || ss[0].Covers != 4 || !strings.HasPrefix(ss[0].Text, "SUMMARY-1") {
		t.Fatalf("stored summaries %+v, want one covering 4 messages", ss)
	}

	stopped, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.orch.Close(stopped); err != nil {
		t.Fatal(err)
	}
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: client, Profiles: profiles, Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	if final := f.ask(t, "sum", "s", "short one"); agentfleet.JoinText(final.Content) != "a4" {
		t.Fatalf("after the restart: %q %s (%s)", agentfleet.JoinText(final.Content), final.StopReason, final.ErrorMessage)
	}
	reqs = srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5: no second summary", len(reqs))
	}
	last := string(reqs[4].Body)
	if !strings.Contains(last, "SUMMARY-1") || strings.Contains(last, "question 1") || !strings.Contains(last, "short one") {
		t.Errorf("the request after the restart does not use the stored summary: %.300s", last)
	}
	if n := len(summaries()); n != 1 {
		t.Errorf("%d summaries stored, want 1", n)
	}
}
