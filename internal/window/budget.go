package window

import (
	"fmt"

	"github.com/agentfleet/agentfleet"
)

// Budget bounds what runs of a session may spend. Tokens are input plus
// output tokens as the model's usage reports them; zero fields set no
// bound. Token budgets are checked before each model call, so a run may
// pass its budget by what its last model call spent, and no further call
// is made; the tool call budget is checked before a batch runs.
type Budget struct {
	// MaxTokensPerRun bounds the tokens of one run.
	MaxTokensPerRun int
	// MaxTokensPerSession bounds the tokens of all the runs of the
	// session, those in its stored history included.
	MaxTokensPerSession int
	// MaxToolCallsPerRun bounds the tool calls one run executes: a model
	// response whose calls would pass it has none of them run.
	MaxToolCallsPerRun int
}

// The budget names of budget.exceeded events, as in agent profiles.
const (
	BudgetTokensPerRun     = "max_tokens_per_run"
	BudgetTokensPerSession = "max_tokens_per_session"
	BudgetToolCallsPerRun  = "max_tool_calls_per_run"
)

// BudgetText is the result of the tool calls not executed because of the
// tool call budget.
const BudgetText = "Tool call not executed: the run reached its limit of %d tool calls (max_tool_calls_per_run)"

// TokensOf returns the tokens u counts: input plus output, else its total;
// 0 for no usage.
func TokensOf(u *agentfleet.Usage) int {
	if u == nil {
		return 0
	}
	if n := u.InputTokens + u.OutputTokens; n > 0 {
		return n
	}
	return u.TotalTokens
}

// Exceeded is a budget that a run reached: the budget's name (one of the
// Budget constants), its limit, what was used, and the unit of both.
type Exceeded struct {
	Name        string
	Limit, Used int
	Unit        string
}

// Text says why the run stopped, for its final message and the
// budget.exceeded event.
func (e *Exceeded) Text() string {
	return fmt.Sprintf("the run stopped at its budget %s of %d %s (used %d)", e.Name, e.Limit, e.Unit, e.Used)
}

// Tokens returns the token budget that a run which spent runTokens, in a
// session whose model responses spent sessionTokens, has reached, so that
// it may make no further model call; nil when it may go on. The run's
// budget is checked first.
func (b Budget) Tokens(runTokens, sessionTokens int) *Exceeded {
	if b.MaxTokensPerRun > 0 && runTokens >= b.MaxTokensPerRun {
		return &Exceeded{Name: BudgetTokensPerRun, Limit: b.MaxTokensPerRun, Used: runTokens, Unit: "tokens"}
	}
	if b.MaxTokensPerSession > 0 && sessionTokens >= b.MaxTokensPerSession {
		return &Exceeded{Name: BudgetTokensPerSession, Limit: b.MaxTokensPerSession, Used: sessionTokens, Unit: "tokens"}
	}
	return nil
}

// ToolCalls returns the tool call budget that running asked more calls,
// in a run that ran done already, would pass; nil when they may run.
func (b Budget) ToolCalls(done, asked int) *Exceeded {
	limit := b.MaxToolCallsPerRun
	if limit <= 0 || done+asked <= limit {
		return nil
	}
	return &Exceeded{Name: BudgetToolCallsPerRun, Limit: limit, Used: done + asked, Unit: "tool calls"}
}
