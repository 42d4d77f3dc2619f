package window

import (
	"fmt"
	"strconv"

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
	// MaxCostPerRun, MaxCostPerSession and MaxCostPerAgent bound, in US
	// dollars, what the model calls of one run, of all the runs of the
	// session, and of all the agent's runs across the fleet today (UTC)
	// cost. They are checked before each model call, like the token
	// budgets.
	MaxCostPerRun, MaxCostPerSession, MaxCostPerAgent float64
}

// The budget names of budget.exceeded events, as in agent profiles.
const (
	BudgetTokensPerRun     = "max_tokens_per_run"
	BudgetTokensPerSession = "max_tokens_per_session"
	BudgetToolCallsPerRun  = "max_tool_calls_per_run"
	BudgetCostPerRun       = "max_cost_per_run"
	BudgetCostPerSession   = "max_cost_per_session"
	BudgetCostPerAgent     = "max_cost_per_agent"
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
// Budget constants), its limit, what was used, and the unit of both. A
// cost budget has its limit and use in LimitUSD and UsedUSD, unit "USD".
type Exceeded struct {
	Name              string
	Limit, Used       int
	LimitUSD, UsedUSD float64
	Unit              string
}

// Text says why the run stopped, for its final message and the
// budget.exceeded event.
func (e *Exceeded) Text() string {
	if e.Unit == UnitUSD {
		return fmt.Sprintf("the run stopped at its budget %s of %s USD (used %s)", e.Name, dollars(e.LimitUSD), dollars(e.UsedUSD))
	}
	return fmt.Sprintf("the run stopped at its budget %s of %d %s (used %d)", e.Name, e.Limit, e.Unit, e.Used)
}

// UnitUSD is the unit of the cost budgets.
const UnitUSD = "USD"

// dollars writes an amount with enough digits to tell small costs apart.
func dollars(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Cost returns the cost budget that a run which spent run dollars, in a
// session that spent session and of an agent that spent agent today, has
// reached, so that it may make no further model call; nil when it may go
// on. The run's budget is checked first, then the session's, then the
// agent's.
func (b Budget) Cost(run, session, agent float64) *Exceeded {
	for _, c := range []struct {
		name        string
		limit, used float64
	}{{BudgetCostPerRun, b.MaxCostPerRun, run}, {BudgetCostPerSession, b.MaxCostPerSession, session}, {BudgetCostPerAgent, b.MaxCostPerAgent, agent}} {
		if c.limit > 0 && c.used >= c.limit {
			return &Exceeded{Name: c.name, LimitUSD: c.limit, UsedUSD: c.used, Unit: UnitUSD}
		}
	}
	return nil
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
