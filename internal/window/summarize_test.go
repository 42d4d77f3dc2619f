package window_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/window"
)

// TestPlanSummary plans the summary of a history of twenty turns of five
// messages of about 400 bytes, for a window of 4000 tokens: nothing to
// write when it fits or a stored summary makes it fit; else a cut at a
// user message that keeps the most recent turns fitting in half the
// budget, after a summary that covers part of the current run is set
// aside.
func TestPlanSummary(t *testing.T) {
	hist := append(history(20, 400), agentfleet.NewUserMessage("now"))
	runStart := len(hist) - 1
	p := window.Policy{Strategy: window.StrategySummarize, Window: 4000, ReserveOutput: 500}
	// Windows whose budget the history fills to 70% and to 85%: either
	// side of the three quarters that call for a summary.
	fixed := new(window.Estimator).Tokens(100)
	all := new(window.Estimator).Tokens(window.MessagesBytes(hist))
	at70 := window.Policy{Strategy: window.StrategySummarize, Window: all*100/70 + fixed + 500, ReserveOutput: 500}
	at85 := window.Policy{Strategy: window.StrategySummarize, Window: all*100/85 + fixed + 500, ReserveOutput: 500}
	for _, c := range []struct {
		name    string
		p       window.Policy
		summary *agentfleet.ContextSummary
		// covered and text: the summary the request may send; write: a
		// new one is asked for.
		covered int
		text    string
		write   bool
	}{
		{name: "fits", p: window.Policy{Strategy: window.StrategySummarize, Window: 1 << 20}},
		{name: "under three quarters", p: at70},
		{name: "over three quarters", p: at85, write: true},
		{name: "too long", p: p, write: true},
		{name: "summary that makes it fit", p: p, summary: &agentfleet.ContextSummary{Covers: 95, Text: "S"}, covered: 95, text: "S"},
		{name: "summary not enough", p: p, summary: &agentfleet.ContextSummary{Covers: 10, Text: "S"}, covered: 10, text: "S", write: true},
		{name: "summary into the current run", p: p, summary: &agentfleet.ContextSummary{Covers: runStart + 1, Text: "S"}, write: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := c.p.PlanSummary(window.SummaryInput{Messages: hist, RunStart: runStart, FixedBytes: 100, Summary: c.summary})
			if plan.Covered != c.covered || plan.Text != c.text || plan.Write() != c.write {
				t.Fatalf("plan %+v, want covered %d, text %q, write %v", plan, c.covered, c.text, c.write)
			}
			if !plan.Write() {
				return
			}
			if _, ok := hist[plan.Cut].(*agentfleet.UserMessage); !ok || plan.Cut > runStart || plan.Cut <= plan.Covered {
				t.Errorf("cut at %d (a %s), want a user message after %d, not after the current run's start %d", plan.Cut, hist[plan.Cut].MessageRole(), plan.Covered, runStart)
			}
			est := new(window.Estimator)
			budget := c.p.Budget(est.Tokens(100))
			if kept := est.Tokens(window.MessagesBytes(hist[plan.Cut:])); kept > budget/2 {
				t.Errorf("the turns after the cut take %d tokens, more than half the budget %d", kept, budget)
			}
			if plan.Cut > 5 && est.Tokens(window.MessagesBytes(hist[plan.Cut-5:])) <= budget/2 {
				t.Errorf("the turn before the cut at %d would fit in half the budget %d too", plan.Cut, budget)
			}
		})
	}
}

func TestSummarized(t *testing.T) {
	hist := append(history(3, 10), agentfleet.NewUserMessage("now"))
	msgs, start := window.Summarized(hist, 15, 0, "")
	if len(msgs) != len(hist) || start != 15 {
		t.Errorf("with no summary: %d messages, run start %d; want the history as it is", len(msgs), start)
	}
	msgs, start = window.Summarized(hist, 15, 10, "S")
	if len(msgs) != 7 || start != 6 || agentfleet.JoinText(msgs[0].(*agentfleet.UserMessage).Content) != window.SummaryLead+"S" || msgs[1] != hist[10] {
		t.Errorf("with a summary of 10 messages: %s, run start %d", roles(msgs), start)
	}
	if got, want := window.SummarizedBytes(hist, 10, "S"), window.MessagesBytes(msgs); got != want {
		t.Errorf("SummarizedBytes = %d, want the bytes of the messages sent, %d", got, want)
	}
	// A summary of messages a cut dropped (package retention) covers none
	// of hist: it goes before them all.
	msgs, start = window.Summarized(hist, 15, 0, "S")
	if len(msgs) != len(hist)+1 || start != 16 || agentfleet.JoinText(msgs[0].(*agentfleet.UserMessage).Content) != window.SummaryLead+"S" || msgs[1] != hist[0] {
		t.Errorf("with a summary of dropped messages: %s, run start %d", roles(msgs), start)
	}
	if got, want := window.SummarizedBytes(hist, 0, "S"), window.MessagesBytes(msgs); got != want {
		t.Errorf("SummarizedBytes of a summary covering 0 = %d, want %d", got, want)
	}
}

func TestTranscript(t *testing.T) {
	msgs := []agentfleet.Message{agentfleet.NewUserMessage("q"), callMsg("get#1"), result("get#1", strings.Repeat("r", 3000)), answer("a")}
	got := window.Policy{Window: 100000}.Transcript("earlier", msgs, nil)
	for _, want := range []string{"Earlier summary:\nearlier\n", "user: q\n", "assistant called get({})\n", "tool get returned: " + strings.Repeat("r", 2000) + " […]\n", "assistant: a\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
	short := window.Policy{Window: 300, ReserveOutput: 1}.Transcript("", history(10, 400), nil)
	if !strings.HasSuffix(short, "[… the rest of the transcript left out]\n") || len(short) > 2000 {
		t.Errorf("transcript of %d bytes for a window of 300 tokens, want it cut:\n%.200s", len(short), short)
	}
}
