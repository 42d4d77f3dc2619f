package delegate

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/agentfleet/agentfleet"
)

// The headers of an ask that carry what remained of the parent run's
// budgets (agentfleet.Budget), each optional beside the parent headers: a
// bound the child's run is held within as well as within its own
// profile's, so that a header may lower a child's budget and never raise
// it.
const (
	HeaderBudgetTokens    = "Agentfleet-Parent-Budget-Tokens"
	HeaderBudgetToolCalls = "Agentfleet-Parent-Budget-Tool-Calls"
)

// AllHeaders lists every header of an ask sent by an ask tool, the parent
// headers and the budget headers: what a relay of the ask keeps.
var AllHeaders = append(slices.Clip(Headers), HeaderBudgetTokens, HeaderBudgetToolCalls)

// MaxBudget bounds the value of a budget header.
const MaxBudget = 1_000_000_000_000

// encodeBudget adds the budget headers of b (nil: none) to h.
func encodeBudget(h map[string]string, b *agentfleet.Budget) {
	if b == nil {
		return
	}
	if b.Tokens > 0 {
		h[HeaderBudgetTokens] = strconv.Itoa(b.Tokens)
	}
	if b.ToolCalls > 0 {
		h[HeaderBudgetToolCalls] = strconv.Itoa(b.ToolCalls)
	}
}

// parseBudget reads the budget headers through get: nil when neither is
// set. A value that is not a decimal integer from 1 to MaxBudget is an
// error naming the header.
func parseBudget(get func(name string) string) (*agentfleet.Budget, error) {
	var b agentfleet.Budget
	for _, f := range []struct {
		h string
		v *int
	}{{HeaderBudgetTokens, &b.Tokens}, {HeaderBudgetToolCalls, &b.ToolCalls}} {
		s := get(f.h)
		if s == "" {
			continue
		}
		n, err := budgetValue(s)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", f.h, err)
		}
		*f.v = n
	}
	if b == (agentfleet.Budget{}) {
		return nil, nil
	}
	return &b, nil
}

// budgetValue reads one budget header's value.
func budgetValue(s string) (int, error) {
	if len(s) > len(strconv.Itoa(MaxBudget)) {
		return 0, fmt.Errorf("value is %d bytes long, the limit is %d", len(s), len(strconv.Itoa(MaxBudget)))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("byte %d of %q is not a decimal digit", i+1, s)
		}
	}
	n, _ := strconv.Atoi(s)
	if n < 1 || n > MaxBudget {
		return 0, fmt.Errorf("value %s is out of range: from 1 to %d", s, MaxBudget)
	}
	return n, nil
}
