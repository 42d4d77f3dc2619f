package loop

import (
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/window"
)

// overBudget returns the final message of a run that may make no further
// model call, having spent a token budget (window.Budget.Tokens); nil when
// it may go on.
func (r *run) overBudget() *agentfleet.AssistantMessage {
	b := r.limits()
	if e := b.Tokens(window.TokensOf(r.usage), r.s.spent()); e != nil {
		return r.budget(e)
	}
	if b.MaxCostPerRun > 0 || b.MaxCostPerSession > 0 || b.MaxCostPerAgent > 0 {
		var agent float64
		if f := r.s.cfg.AgentCost; f != nil && b.MaxCostPerAgent > 0 {
			agent = f()
		}
		if e := b.Cost(agentfleet.CostOf(r.usage), r.s.spentUSD(), agent); e != nil {
			return r.budget(e)
		}
	}
	return nil
}

// overToolCalls answers calls, when running them would pass the tool call
// budget (window.Budget.ToolCalls), with error results, and returns the
// run's final message; nil when they may run.
func (r *run) overToolCalls(calls []agentfleet.ToolCall) *agentfleet.AssistantMessage {
	e := r.limits().ToolCalls(r.calls, len(calls))
	if e == nil {
		r.calls += len(calls)
		return nil
	}
	text := fmt.Sprintf(window.BudgetText, e.Limit)
	for _, c := range calls {
		r.emit(&agentfleet.Event{Type: agentfleet.EventToolStart, ToolCallID: c.ID, ToolName: c.Name, Arguments: c.Arguments})
		o := &pipeline.Outcome{Call: c, Result: agentfleet.ErrorResult(text), IsError: true, Kind: pipeline.Skipped}
		r.emit(&agentfleet.Event{Type: agentfleet.EventToolEnd, ToolCallID: c.ID, ToolName: c.Name, Result: o.Result, IsError: true, Outcome: string(pipeline.Skipped)})
		r.append(o.Message())
	}
	return r.budget(e)
}

// budget emits budget.exceeded and returns the final message of a run
// stopped by the budget e.
func (r *run) budget(e *window.Exceeded) *agentfleet.AssistantMessage {
	text := e.Text()
	r.emit(&agentfleet.Event{Type: agentfleet.EventBudgetExceeded, Budget: e.Name, Limit: e.Limit, Used: e.Used,
		LimitUSD: e.LimitUSD, UsedUSD: e.UsedUSD, ErrorMessage: text})
	return r.synthetic(agentfleet.StopReasonBudget, text)
}
