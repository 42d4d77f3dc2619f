package window

import "github.com/agentfleet/agentfleet"

// Within returns b held within what a parent run left (in, nil for a
// client's run): each bound is the lower of b's and the parent's, so that
// what an ask claims may lower a child's budget and never raise it above
// the child's own profile. A parent's token remainder bounds the child's
// run; its tool call remainder the child run's tool calls.
func (b Budget) Within(in *agentfleet.Budget) Budget {
	if in == nil {
		return b
	}
	b.MaxTokensPerRun = lower(b.MaxTokensPerRun, in.Tokens)
	b.MaxToolCallsPerRun = lower(b.MaxToolCallsPerRun, in.ToolCalls)
	return b
}

// lower returns the lower of two bounds, where zero (or less) is none.
func lower(a, b int) int {
	switch {
	case b <= 0:
		return a
	case a <= 0 || b < a:
		return b
	}
	return a
}

// Left returns what remains of b for a child asked by a run that spent
// runTokens and ran calls tool calls (the asking call among them), in a
// session whose model responses spent sessionTokens: nil when b sets no
// bound. A budget with nothing left is returned as Exceeded, and the child
// is not asked: a bound of zero would set none.
func (b Budget) Left(runTokens, sessionTokens, calls int) (*agentfleet.Budget, *Exceeded) {
	var left agentfleet.Budget
	for _, t := range []struct {
		name        string
		limit, used int
	}{{BudgetTokensPerRun, b.MaxTokensPerRun, runTokens}, {BudgetTokensPerSession, b.MaxTokensPerSession, sessionTokens}} {
		if t.limit <= 0 {
			continue
		}
		if t.used >= t.limit {
			return nil, &Exceeded{Name: t.name, Limit: t.limit, Used: t.used, Unit: "tokens"}
		}
		left.Tokens = lower(left.Tokens, t.limit-t.used)
	}
	if l := b.MaxToolCallsPerRun; l > 0 {
		if calls >= l {
			return nil, &Exceeded{Name: BudgetToolCallsPerRun, Limit: l, Used: calls, Unit: "tool calls"}
		}
		left.ToolCalls = l - calls
	}
	if left == (agentfleet.Budget{}) {
		return nil, nil
	}
	return &left, nil
}
