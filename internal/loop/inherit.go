package loop

import (
	"context"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/window"
)

// limits returns the run's budgets: the session's, held within what the
// parent run had left when it asked (window.Budget.Within), for a run that
// answers another agent's call.
func (r *run) limits() window.Budget {
	var in *agentfleet.Budget
	if r.origin != nil {
		in = r.origin.Budget
	}
	return r.s.cfg.Budget.Within(in)
}

// countResults adds the usage that results report (an ask tool's is the
// child run's) to the run's, so that a child's tokens count toward its
// parent's budgets and show in its usage.
func (r *run) countResults(ms []*agentfleet.ToolResultMessage) {
	for _, m := range ms {
		r.usage = r.usage.Add(m.Usage)
	}
}

type leftKey struct{}

type left struct {
	budget   *agentfleet.Budget
	exceeded *window.Exceeded
}

// withLeft returns ctx carrying what the run has left of its budgets as
// its batch begins, for the tools that ask a child (BudgetLeft).
func (r *run) withLeft(ctx context.Context) context.Context {
	b, e := r.limits().Left(window.TokensOf(r.usage), r.s.spent(), r.calls)
	return context.WithValue(ctx, leftKey{}, left{b, e})
}

// BudgetLeft returns what the run whose tool call ctx belongs to had left
// of its budgets when the call's batch began (window.Budget.Left): nil for
// no bound, or the budget with nothing left. Outside a run, both nil.
func BudgetLeft(ctx context.Context) (*agentfleet.Budget, *window.Exceeded) {
	l, _ := ctx.Value(leftKey{}).(left)
	return l.budget, l.exceeded
}

// spentBy returns the tokens m counts toward the session's budget: a model
// response's usage, or what a tool result reports (a child run's).
func spentBy(m agentfleet.Message) int {
	switch m := m.(type) {
	case *agentfleet.AssistantMessage:
		return window.TokensOf(m.Usage)
	case *agentfleet.ToolResultMessage:
		return window.TokensOf(m.Usage)
	}
	return 0
}

// costBy returns what m counts toward the session's cost budget, as
// spentBy does for tokens.
func costBy(m agentfleet.Message) float64 {
	switch m := m.(type) {
	case *agentfleet.AssistantMessage:
		return agentfleet.CostOf(m.Usage)
	case *agentfleet.ToolResultMessage:
		return agentfleet.CostOf(m.Usage)
	}
	return 0
}
