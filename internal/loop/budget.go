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
	if e := r.limits().Tokens(window.TokensOf(r.usage), r.s.spent()); e != nil {
		return r.budget(e)
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
	r.emit(&agentfleet.Event{Type: agentfleet.EventBudgetExceeded, Budget: e.Name, Limit: e.Limit, Used: e.Used, ErrorMessage: text})
	return r.synthetic(agentfleet.StopReasonBudget, text)
}
