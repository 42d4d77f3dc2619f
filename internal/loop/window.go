package loop

import (
	"context"
	"errors"

	"github.com/agentfleet/agentfleet/internal/pipeline"
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

// StrategyTruncate is the strategy of ContextPolicy.
const StrategyTruncate = "truncate"

// DefaultReserveOutput is the most that ContextPolicy keeps free for the
// response when ReserveOutput is zero (it keeps a quarter of a smaller
// window).
const DefaultReserveOutput = 4096

// Compaction says what a prepare-context hook left out of the request of
// a turn, for the context.compacted event.
type Compaction struct {
	Strategy                                 string
	DroppedTurns, DroppedMessages, Shortened int
	TokensBefore, TokensAfter                int
}

// ContextPolicy keeps each request within a model's context window with the
// truncate strategy (Truncate): its Prepare method is a PrepareContextFunc.
// With Strategy StrategySummarize, a Session also has the model summarize
// the oldest part of the history first. The zero value sends the history
// as it is, until the model refuses a request as too long.
type ContextPolicy struct {
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
func (p ContextPolicy) Budget(fixed int) int {
	if p.Window <= 0 {
		return 0
	}
	reserve := p.ReserveOutput
	if reserve <= 0 {
		reserve = min(DefaultReserveOutput, p.Window/4)
	}
	return max(p.Window-reserve-fixed, 0)
}

// Prepare implements PrepareContextFunc: the history truncated to fit the
// window, or to half of the refused request when st.Refused is set. It
// reports what it left out in st.Compaction.
func (p ContextPolicy) Prepare(_ context.Context, st *State) (*pipeline.Context, error) {
	pctx := &pipeline.Context{SystemPrompt: st.SystemPrompt, Messages: st.Messages, Tools: st.Tools}
	if p.Window <= 0 && st.Refused <= 0 {
		return pctx, nil
	}
	est := st.Tokens
	if est == nil {
		est = new(Estimator)
	}
	budget := p.Budget(est.Tokens(fixedBytes(st)))
	limit := p.MaxToolResultBytes
	if limit == 0 && p.Window > 0 {
		limit = est.Bytes(p.Window / 4)
	}
	if st.Refused > 0 {
		if budget == 0 || st.Refused/2 < budget {
			budget = st.Refused / 2
		}
		// A result that alone fills half of what was refused is cut too.
		if r := est.Bytes(budget / 2); limit <= 0 || r < limit {
			limit = r
		}
	}
	t := Truncate(TruncateInput{Messages: st.Messages, RunStart: st.RunStart, Budget: budget, MaxResultBytes: max(limit, 0), Tokens: est})
	if t.Changed() {
		pctx.Messages = t.Messages
		st.Compaction = &Compaction{
			Strategy: StrategyTruncate, DroppedTurns: t.DroppedTurns, DroppedMessages: t.DroppedMessages,
			Shortened: t.Shortened, TokensBefore: t.TokensBefore, TokensAfter: t.TokensAfter,
		}
	}
	return pctx, nil
}
