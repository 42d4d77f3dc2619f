package window_test

import (
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/window"
)

func TestBudgetTokens(t *testing.T) {
	for _, c := range []struct {
		name         string
		budget       window.Budget
		run, session int
		want         *window.Exceeded
	}{
		{"no budget", window.Budget{}, 1 << 30, 1 << 30, nil},
		{"run under", window.Budget{MaxTokensPerRun: 100}, 99, 1000, nil},
		{"run at", window.Budget{MaxTokensPerRun: 100}, 100, 0, &window.Exceeded{Name: window.BudgetTokensPerRun, Limit: 100, Used: 100, Unit: "tokens"}},
		{"session at", window.Budget{MaxTokensPerSession: 500}, 10, 500, &window.Exceeded{Name: window.BudgetTokensPerSession, Limit: 500, Used: 500, Unit: "tokens"}},
		{"session under", window.Budget{MaxTokensPerSession: 500}, 10, 499, nil},
		{"run first", window.Budget{MaxTokensPerRun: 100, MaxTokensPerSession: 500}, 120, 600, &window.Exceeded{Name: window.BudgetTokensPerRun, Limit: 100, Used: 120, Unit: "tokens"}},
		{"tool calls only", window.Budget{MaxToolCallsPerRun: 1}, 1 << 30, 1 << 30, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.budget.Tokens(c.run, c.session)
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Errorf("Tokens(%d, %d) = %+v, want %+v", c.run, c.session, got, c.want)
			}
		})
	}
}

func TestBudgetToolCalls(t *testing.T) {
	for _, c := range []struct {
		name        string
		limit       int
		done, asked int
		want        *window.Exceeded
	}{
		{"no budget", 0, 100, 100, nil},
		{"within", 3, 1, 2, nil},
		{"passes", 3, 2, 2, &window.Exceeded{Name: window.BudgetToolCallsPerRun, Limit: 3, Used: 4, Unit: "tool calls"}},
		{"first batch too big", 1, 0, 2, &window.Exceeded{Name: window.BudgetToolCallsPerRun, Limit: 1, Used: 2, Unit: "tool calls"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := window.Budget{MaxToolCallsPerRun: c.limit}.ToolCalls(c.done, c.asked)
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Errorf("ToolCalls(%d, %d) with limit %d = %+v, want %+v", c.done, c.asked, c.limit, got, c.want)
			}
		})
	}
}

func TestExceededText(t *testing.T) {
	e := &window.Exceeded{Name: window.BudgetTokensPerRun, Limit: 100, Used: 120, Unit: "tokens"}
	if got, want := e.Text(), "the run stopped at its budget max_tokens_per_run of 100 tokens (used 120)"; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
}

func TestTokensOf(t *testing.T) {
	for _, c := range []struct {
		u    *agentfleet.Usage
		want int
	}{
		{nil, 0},
		{&agentfleet.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 99}, 15},
		{&agentfleet.Usage{TotalTokens: 7}, 7},
	} {
		if got := window.TokensOf(c.u); got != c.want {
			t.Errorf("TokensOf(%+v) = %d, want %d", c.u, got, c.want)
		}
	}
}
