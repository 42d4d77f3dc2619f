// Package window keeps a session's model requests within the model's
// context window and its runs within their budgets: the token estimate
// (estimate.go), the truncate strategy (truncate.go), what the summarize
// strategy covers and the transcript it summarizes (summarize.go), and the
// token and tool call budgets (budget.go). Its functions decide and do no
// I/O: the loop (internal/loop) calls the model, stores summaries and emits
// the events. It imports only the domain types (the root agentfleet
// package) and the standard library; the loop imports it, not the reverse.
package window

import (
	"errors"

	"github.com/agentfleet/agentfleet"
)

// ErrContextLength is what a model's error wraps (errors.Is) when the model
// refused a request as longer than its context window. The loop then
// compacts the request once more and tries it once again.
var ErrContextLength = errors.New("the request is longer than the model's context window")

// Compaction reasons, the Reason of a context.compacted event.
const (
	CompactWindow        = "window"
	CompactContextLength = "context_length_exceeded"
)

// StrategyTruncate is the strategy of a Policy that leaves out the oldest
// whole turns (Truncate).
const StrategyTruncate = "truncate"

// DefaultReserveOutput is the most that a Policy keeps free for the
// response when ReserveOutput is zero (it keeps a quarter of a smaller
// window).
const DefaultReserveOutput = 4096

// Compaction says what was left out of the request of a turn, or
// shortened in it, for the context.compacted event.
type Compaction struct {
	Strategy                                 string
	DroppedTurns, DroppedMessages, Shortened int
	TokensBefore, TokensAfter                int
}

// Policy keeps each request within a model's context window with the
// truncate strategy (Fit). With Strategy StrategySummarize, the loop also
// has the model summarize the oldest part of the history first
// (PlanSummary). The zero value sends the history as it is, until the
// model refuses a request as too long.
type Policy struct {
	// Strategy is StrategyTruncate (or empty, the same) or
	// StrategySummarize.
	Strategy string
	// SummaryModel names the model that writes summaries; default the
	// session's.
	SummaryModel string
	// Window is the model's context window in tokens; 0 means unknown:
	// the history is sent whole unless the model refuses it.
	Window int
	// ReserveOutput is the tokens kept free for the response; default
	// min(DefaultReserveOutput, Window/4).
	ReserveOutput int
	// MaxToolResultBytes shortens, in the request only, the text of every
	// tool result longer than it; default the bytes of a quarter of the
	// window by the estimate, negative for no limit.
	MaxToolResultBytes int
}

// Budget returns the tokens the messages of a request may take, once the
// reserve and fixed (the system prompt and tool definitions) are taken
// from the window; 0 when the window is unknown.
func (p Policy) Budget(fixed int) int {
	if p.Window <= 0 {
		return 0
	}
	reserve := p.ReserveOutput
	if reserve <= 0 {
		reserve = min(DefaultReserveOutput, p.Window/4)
	}
	return max(p.Window-reserve-fixed, 0)
}

// FitInput is what Fit works on: the part of a turn's request it may
// shorten, and what else the request holds.
type FitInput struct {
	// Messages is the history as the turn begins, oldest first; Fit does
	// not change it.
	Messages []agentfleet.Message
	// RunStart is the index of the current run's first message:
	// Messages[RunStart:] are always kept.
	RunStart int
	// FixedBytes measures what the request sends besides its messages
	// (FixedBytes).
	FixedBytes int
	// Refused, when not zero, is the estimated tokens of the messages of
	// the turn's request that the model refused as longer than its
	// context window: Fit is asked for a shorter one.
	Refused int
	// Tokens estimates; nil means a fresh Estimator.
	Tokens *Estimator
}

// Unbounded reports whether requests go as they are, so that Fit has
// nothing to measure: the window is unknown, and the model refused no
// request (refused is FitInput.Refused).
func (p Policy) Unbounded(refused int) bool { return p.Window <= 0 && refused <= 0 }

// Fit returns the messages to send for in: the history truncated to fit
// the window, or to half of the refused request when in.Refused is set,
// and what was left out, nil when nothing was. It is a pure function.
func (p Policy) Fit(in FitInput) ([]agentfleet.Message, *Compaction) {
	if p.Unbounded(in.Refused) {
		return in.Messages, nil
	}
	est := in.Tokens
	if est == nil {
		est = new(Estimator)
	}
	budget := p.Budget(est.Tokens(in.FixedBytes))
	limit := p.MaxToolResultBytes
	if limit == 0 && p.Window > 0 {
		limit = est.Bytes(p.Window / 4)
	}
	if in.Refused > 0 {
		if budget == 0 || in.Refused/2 < budget {
			budget = in.Refused / 2
		}
		// A result that alone fills half of what was refused is cut too.
		if r := est.Bytes(budget / 2); limit <= 0 || r < limit {
			limit = r
		}
	}
	t := Truncate(TruncateInput{Messages: in.Messages, RunStart: in.RunStart, Budget: budget, MaxResultBytes: max(limit, 0), Tokens: est})
	if !t.Changed() {
		return in.Messages, nil
	}
	return t.Messages, &Compaction{
		Strategy: StrategyTruncate, DroppedTurns: t.DroppedTurns, DroppedMessages: t.DroppedMessages,
		Shortened: t.Shortened, TokensBefore: t.TokensBefore, TokensAfter: t.TokensAfter,
	}
}
