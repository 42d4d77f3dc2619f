package delegate_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/delegate"
)

// TestBudgetHeaders: what a parent run had left of its budgets goes on the
// ask and comes back; a budget header alone, or a value that is not a
// count from 1 to MaxBudget, is refused with an error naming the header.
func TestBudgetHeaders(t *testing.T) {
	p := &agentfleet.Parent{Agent: "boss", Session: "s1", RunID: "r1", ToolCallID: "c1", Chain: []string{"boss"},
		Budget: &agentfleet.Budget{Tokens: 1234, ToolCalls: 3}}
	h := delegate.Encode(p)
	got, err := delegate.Parse(func(k string) string { return h[k] })
	if err != nil || got.Budget == nil || *got.Budget != *p.Budget {
		t.Fatalf("Parse(Encode(p)) = %+v, %v; want budget %+v", got, err, p.Budget)
	}
	p.Budget = nil
	h = delegate.Encode(p)
	if _, ok := h[delegate.HeaderBudgetTokens]; ok {
		t.Errorf("a parent without budgets encodes %s", delegate.HeaderBudgetTokens)
	}
	if got, err := delegate.Parse(func(k string) string { return h[k] }); err != nil || got.Budget != nil {
		t.Errorf("no budget headers: %+v, %v; want no budget", got, err)
	}
	with := func(k, v string) map[string]string {
		m := delegate.Encode(p)
		m[k] = v
		return m
	}
	for _, tc := range []struct {
		name string
		h    map[string]string
		want string
	}{
		{"a budget without a parent", map[string]string{delegate.HeaderBudgetTokens: "10"}, "comes only with the parent headers"},
		{"negative", with(delegate.HeaderBudgetTokens, "-5"), `header Agentfleet-Parent-Budget-Tokens: byte 1 of "-5" is not a decimal digit`},
		{"zero", with(delegate.HeaderBudgetToolCalls, "0"), "header Agentfleet-Parent-Budget-Tool-Calls: value 0 is out of range: from 1 to 1000000000000"},
		{"too large", with(delegate.HeaderBudgetTokens, "9999999999999"), "header Agentfleet-Parent-Budget-Tokens: value 9999999999999 is out of range"},
		{"oversized", with(delegate.HeaderBudgetTokens, strings.Repeat("9", 4096)), "header Agentfleet-Parent-Budget-Tokens: value is 4096 bytes long, the limit is 13"},
		{"garbage", with(delegate.HeaderBudgetToolCalls, "1e9"), `header Agentfleet-Parent-Budget-Tool-Calls: byte 2 of "1e9" is not a decimal digit`},
		{"a space", with(delegate.HeaderBudgetTokens, " 12"), "header Agentfleet-Parent-Budget-Tokens: byte 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := delegate.Parse(func(k string) string { return tc.h[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %+v, %v; want an error with %q", got, err, tc.want)
			}
		})
	}
}
