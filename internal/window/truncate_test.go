package window_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/window"
)

// TestTruncateKeepsWholeTurns truncates a history to every budget from
// nothing to all of it: no tool call is parted from its result, the
// current run is always kept, the result fits when it can, and the history
// given is left as it was.
func TestTruncateKeepsWholeTurns(t *testing.T) {
	hist := history(6, 100)
	current := []agentfleet.Message{agentfleet.NewUserMessage("now"), callMsg("now#c"), result("now#c", "fresh")}
	msgs := append(append([]agentfleet.Message(nil), hist...), current...)
	before := roles(msgs)
	est := new(window.Estimator)
	all := 0
	for _, m := range msgs {
		all += window.MessageBytes(m)
	}
	for budget := 0; budget <= est.Tokens(all)+10; budget += 7 {
		tr := window.Truncate(window.TruncateInput{Messages: msgs, RunStart: len(hist), Budget: budget, Tokens: est})
		checkPairs(t, tr.Messages)
		if got, want := roles(tr.Messages[len(tr.Messages)-3:]), roles(current); got != want {
			t.Fatalf("budget %d: the request ends %s, want the current run %s", budget, got, want)
		}
		cur := 0
		for _, m := range current {
			cur += window.MessageBytes(m)
		}
		if est.Tokens(cur) <= budget && tr.TokensAfter > budget {
			t.Errorf("budget %d: %d tokens kept, over the budget", budget, tr.TokensAfter)
		}
		if tr.DroppedMessages != len(msgs)-len(tr.Messages) {
			t.Errorf("budget %d: DroppedMessages %d, but %d of %d messages are gone", budget, tr.DroppedMessages, len(msgs)-len(tr.Messages), len(msgs))
		}
		if tr.DroppedMessages%5 != 0 || tr.DroppedTurns != tr.DroppedMessages/5 {
			t.Errorf("budget %d: dropped %d messages in %d turns, want whole turns of 5", budget, tr.DroppedMessages, tr.DroppedTurns)
		}
	}
	if got := roles(msgs); got != before {
		t.Errorf("Truncate changed its input:\n%s\nwant\n%s", got, before)
	}
}

// TestTruncateShortensToolResults cuts a long tool result in the request
// with the marker, and leaves the message of the history whole.
func TestTruncateShortensToolResults(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes, two per rune
	big := result("get#1", long)
	msgs := []agentfleet.Message{agentfleet.NewUserMessage("q"), callMsg("get#1"), big, answer("done")}
	tr := window.Truncate(window.TruncateInput{Messages: msgs, RunStart: 0, Budget: 1 << 20, MaxResultBytes: 1001})
	if tr.Shortened != 1 || tr.DroppedMessages != 0 {
		t.Fatalf("shortened %d, dropped %d; want 1 and 0", tr.Shortened, tr.DroppedMessages)
	}
	got := agentfleet.JoinText(tr.Messages[2].(*agentfleet.ToolResultMessage).Content)
	kept, marker, ok := strings.Cut(got, "\n[…")
	if !ok || len(kept) != 1000 || !strings.HasPrefix(long, kept) {
		t.Errorf("shortened result keeps %d bytes (marker found: %v), want the first 1000 bytes, cut at a rune", len(kept), ok)
	}
	if !strings.Contains(marker, "5000 bytes of this tool result left out") || !strings.Contains(marker, "kept in the session's history") {
		t.Errorf("marker %q does not say what was left out and where it is", marker)
	}
	if agentfleet.JoinText(big.Content) != long {
		t.Error("the history's tool result was changed")
	}
	if tr.TokensAfter >= tr.TokensBefore {
		t.Errorf("tokens %d after, %d before", tr.TokensAfter, tr.TokensBefore)
	}
}

// TestEstimatorCalibrates checks that the estimate follows the prompt
// tokens the server reports, and that a refusal raises it above the window.
func TestEstimatorCalibrates(t *testing.T) {
	var e window.Estimator
	if got, want := e.Tokens(4000), 1000; got != want {
		t.Errorf("uncalibrated: %d tokens for 4000 bytes, want %d", got, want)
	}
	e.Calibrate(4000, 2000)
	if got, want := e.Tokens(4000), 2000; got != want {
		t.Errorf("calibrated at 2 bytes per token: %d tokens, want %d", got, want)
	}
	e.Calibrate(4000, 0) // no usage: ignored
	e.Calibrate(4000, 1e6)
	if got, want := e.Tokens(4000), 2000; got != want {
		t.Errorf("after reports that make no sense: %d tokens, want %d", got, want)
	}
	e.Overflowed(4000, 3000)
	if got := e.Tokens(4000); got <= 3000 {
		t.Errorf("after a refusal of 4000 bytes by a window of 3000: %d tokens, want more than 3000", got)
	}
}
