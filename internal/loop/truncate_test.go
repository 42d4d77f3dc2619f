package loop_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// longHistory returns n past turns, each a user message, an assistant
// message calling two tools, their results and a text answer, every
// message about size bytes long.
func longHistory(n, size int) []loop.Entry {
	var out []loop.Entry
	pad := strings.Repeat("x", size)
	for i := range n {
		run := fmt.Sprintf("run%d", i)
		a, b := fmt.Sprintf("t%d#a", i), fmt.Sprintf("t%d#b", i)
		out = append(out, entries(run,
			agentfleet.NewUserMessage(fmt.Sprintf("question %d %s", i, pad)),
			callMsg(a, b),
			result(a, "result a "+pad), result(b, "result b "+pad),
			answer(fmt.Sprintf("answer %d %s", i, pad)),
		)...)
	}
	return out
}

func messagesOf(es []loop.Entry) []agentfleet.Message {
	out := make([]agentfleet.Message, len(es))
	for i, e := range es {
		out[i] = e.Message
	}
	return out
}

// checkPairs fails unless every tool result of msgs follows the assistant
// message that called it, every call of an assistant message has its
// result, and the first message is a user message.
func checkPairs(t *testing.T, msgs []agentfleet.Message) {
	t.Helper()
	if len(msgs) == 0 {
		return
	}
	if _, ok := msgs[0].(*agentfleet.UserMessage); !ok {
		t.Errorf("the first message is a %s, want a user message", msgs[0].MessageRole())
	}
	open := map[string]bool{}
	for i, m := range msgs {
		switch m := m.(type) {
		case *agentfleet.AssistantMessage:
			for id := range open {
				t.Errorf("message %d: call %s has no result before it", i, id)
			}
			open = map[string]bool{}
			for _, c := range m.ToolCalls() {
				open[c.ID] = true
			}
		case *agentfleet.ToolResultMessage:
			if !open[m.ToolCallID] {
				t.Errorf("message %d: result of %s without its call before it", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			for id := range open {
				t.Errorf("message %d: call %s has no result before it", i, id)
			}
		}
	}
}

// TestTruncateKeepsWholeTurns truncates a history to every budget from
// nothing to all of it: no tool call is parted from its result, the
// current run is always kept, the result fits when it can, and the history
// given is left as it was.
func TestTruncateKeepsWholeTurns(t *testing.T) {
	hist := messagesOf(longHistory(6, 100))
	current := []agentfleet.Message{agentfleet.NewUserMessage("now"), callMsg("now#c"), result("now#c", "fresh")}
	msgs := append(append([]agentfleet.Message(nil), hist...), current...)
	before := roles(msgs)
	est := new(loop.Estimator)
	all := 0
	for _, m := range msgs {
		all += loop.MessageBytes(m)
	}
	for budget := 0; budget <= est.Tokens(all)+10; budget += 7 {
		tr := loop.Truncate(loop.TruncateInput{Messages: msgs, RunStart: len(hist), Budget: budget, Tokens: est})
		checkPairs(t, tr.Messages)
		if got, want := roles(tr.Messages[len(tr.Messages)-3:]), roles(current); got != want {
			t.Fatalf("budget %d: the request ends %s, want the current run %s", budget, got, want)
		}
		cur := 0
		for _, m := range current {
			cur += loop.MessageBytes(m)
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
	tr := loop.Truncate(loop.TruncateInput{Messages: msgs, RunStart: 0, Budget: 1 << 20, MaxResultBytes: 1001})
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
	var e loop.Estimator
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
