package loop

import (
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
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

// tokensOf returns the tokens u counts: input plus output, else its total.
func tokensOf(u *agentfleet.Usage) int {
	if u == nil {
		return 0
	}
	if n := u.InputTokens + u.OutputTokens; n > 0 {
		return n
	}
	return u.TotalTokens
}

// overBudget returns the final message of a run that may make no further
// model call, having spent a token budget; nil when it may go on.
func (r *run) overBudget() *agentfleet.AssistantMessage {
	b := r.s.cfg.Budget
	if n := tokensOf(r.usage); b.MaxTokensPerRun > 0 && n >= b.MaxTokensPerRun {
		return r.budget(BudgetTokensPerRun, b.MaxTokensPerRun, n, "tokens")
	}
	if n := r.s.spent(); b.MaxTokensPerSession > 0 && n >= b.MaxTokensPerSession {
		return r.budget(BudgetTokensPerSession, b.MaxTokensPerSession, n, "tokens")
	}
	return nil
}

// overToolCalls answers calls, when running them would pass the tool call
// budget, with error results, and returns the run's final message; nil
// when they may run.
func (r *run) overToolCalls(calls []agentfleet.ToolCall) *agentfleet.AssistantMessage {
	limit := r.s.cfg.Budget.MaxToolCallsPerRun
	if limit <= 0 || r.calls+len(calls) <= limit {
		r.calls += len(calls)
		return nil
	}
	text := fmt.Sprintf(BudgetText, limit)
	for _, c := range calls {
		r.emit(&agentfleet.Event{Type: agentfleet.EventToolStart, ToolCallID: c.ID, ToolName: c.Name, Arguments: c.Arguments})
		o := &pipeline.Outcome{Call: c, Result: agentfleet.ErrorResult(text), IsError: true, Kind: pipeline.Skipped}
		r.emit(&agentfleet.Event{Type: agentfleet.EventToolEnd, ToolCallID: c.ID, ToolName: c.Name, Result: o.Result, IsError: true, Outcome: string(pipeline.Skipped)})
		r.append(o.Message())
	}
	return r.budget(BudgetToolCallsPerRun, limit, r.calls+len(calls), "tool calls")
}

// budget emits budget.exceeded and returns the final message of a run
// stopped by the budget name.
func (r *run) budget(name string, limit, used int, unit string) *agentfleet.AssistantMessage {
	text := fmt.Sprintf("the run stopped at its budget %s of %d %s (used %d)", name, limit, unit, used)
	r.emit(&agentfleet.Event{Type: agentfleet.EventBudgetExceeded, Budget: name, Limit: limit, Used: used, ErrorMessage: text})
	return r.synthetic(agentfleet.StopReasonBudget, text)
}
