package window

import (
	"fmt"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
)

// CutMarker is appended to a tool result shortened in a request, with the
// number of bytes left out; the history and the events keep it whole.
const CutMarker = "[… %d bytes of this tool result left out to fit the model's context window; the full result is kept in the session's history]"

// TruncateInput is what Truncate works on.
type TruncateInput struct {
	// Messages is the history, oldest first. Truncate does not change it.
	Messages []agentfleet.Message
	// RunStart is the index of the current run's first message:
	// Messages[RunStart:] are always kept.
	RunStart int
	// Budget is the tokens the messages may take, by Tokens' estimate.
	Budget int
	// MaxResultBytes shortens the text of each tool result above it; 0
	// leaves them whole.
	MaxResultBytes int
	// Tokens estimates; nil means a fresh Estimator.
	Tokens *Estimator
}

// Truncation is what Truncate kept, and what it left out.
type Truncation struct {
	// Messages are the messages to send: Messages of the input when nothing
	// was left out or shortened, else a new slice (whose shortened tool
	// results are copies).
	Messages []agentfleet.Message
	// DroppedTurns and DroppedMessages count the whole turns left out, and
	// their messages; Shortened the tool results cut at MaxResultBytes.
	DroppedTurns, DroppedMessages, Shortened int
	// TokensBefore and TokensAfter estimate the messages before and after.
	TokensBefore, TokensAfter int
}

// Changed reports whether anything was left out or shortened.
func (t *Truncation) Changed() bool { return t.DroppedMessages > 0 || t.Shortened > 0 }

// Truncate fits a history into a token budget, as the truncate strategy
// does: it shortens every tool result longer than MaxResultBytes, and then
// leaves out the oldest whole turns, a turn being a user message and all
// that follows it up to the next user message, until the rest fits. So an
// assistant message with tool calls is never parted from its results, and
// the current run's messages are always kept (the system prompt is not a
// message: it is always sent). When even the current run does not fit,
// every older turn is left out and the rest is returned as it is. It is a
// pure function.
func Truncate(in TruncateInput) Truncation {
	est := in.Tokens
	if est == nil {
		est = new(Estimator)
	}
	msgs := in.Messages
	runStart := min(max(in.RunStart, 0), len(msgs))
	var out Truncation
	sizes := make([]int, len(msgs))
	before, total := 0, 0
	var short []agentfleet.Message
	for i, m := range msgs {
		n := MessageBytes(m)
		before += n
		if tr, ok := m.(*agentfleet.ToolResultMessage); ok && in.MaxResultBytes > 0 {
			if cut, ok := shorten(tr, in.MaxResultBytes); ok {
				if short == nil {
					short = make([]agentfleet.Message, len(msgs))
					copy(short, msgs)
				}
				short[i] = cut
				out.Shortened++
				n = MessageBytes(cut)
			}
		}
		sizes[i] = n
		total += n
	}
	if short != nil {
		msgs = short
	}
	out.TokensBefore = est.Tokens(before)

	// The turns that may go, oldest first: each starts at a user message
	// (or at the very start) and ends where the next one starts.
	cut := 0
	for cut < runStart && est.Tokens(total) > in.Budget {
		end := cut + 1
		for end < runStart {
			if _, ok := msgs[end].(*agentfleet.UserMessage); ok {
				break
			}
			end++
		}
		for _, n := range sizes[cut:end] {
			total -= n
		}
		out.DroppedTurns++
		out.DroppedMessages += end - cut
		cut = end
	}
	out.Messages = msgs[cut:]
	out.TokensAfter = est.Tokens(total)
	return out
}

// shorten returns a copy of tr whose text blocks hold at most limit bytes
// together, with CutMarker saying how much was left out; false when tr is
// within the limit.
func shorten(tr *agentfleet.ToolResultMessage, limit int) (*agentfleet.ToolResultMessage, bool) {
	text := 0
	for _, c := range tr.Content {
		if c.Type == agentfleet.ContentText {
			text += len(c.Text)
		}
	}
	if text <= limit {
		return nil, false
	}
	cp := *tr
	cp.Content = make([]agentfleet.Content, 0, len(tr.Content))
	left := limit
	for _, c := range tr.Content {
		if c.Type != agentfleet.ContentText {
			cp.Content = append(cp.Content, c)
			continue
		}
		if len(c.Text) > left {
			k := left
			for k > 0 && !utf8.RuneStart(c.Text[k]) {
				k--
			}
			c.Text = c.Text[:k]
		}
		left -= len(c.Text)
		if c.Text != "" {
			cp.Content = append(cp.Content, c)
		}
	}
	cp.Content = append(cp.Content, agentfleet.Text(fmt.Sprintf(CutMarker, text-(limit-left))))
	return &cp, true
}
