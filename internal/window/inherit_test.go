package window

import (
	"testing"

	"github.com/agentfleet/agentfleet"
)

func TestBudgetWithin(t *testing.T) {
	for _, tc := range []struct {
		name string
		own  Budget
		in   *agentfleet.Budget
		want Budget
	}{
		{"a client's run keeps its own", Budget{MaxTokensPerRun: 100}, nil, Budget{MaxTokensPerRun: 100}},
		{"the parent's remainder lowers", Budget{MaxTokensPerRun: 100, MaxToolCallsPerRun: 9}, &agentfleet.Budget{Tokens: 40, ToolCalls: 2}, Budget{MaxTokensPerRun: 40, MaxToolCallsPerRun: 2}},
		{"a higher claim does not raise", Budget{MaxTokensPerRun: 100, MaxToolCallsPerRun: 3}, &agentfleet.Budget{Tokens: 1000, ToolCalls: 50}, Budget{MaxTokensPerRun: 100, MaxToolCallsPerRun: 3}},
		{"a bound where the profile sets none", Budget{}, &agentfleet.Budget{Tokens: 7, ToolCalls: 1}, Budget{MaxTokensPerRun: 7, MaxToolCallsPerRun: 1}},
		{"a negative claim sets none", Budget{MaxTokensPerRun: 5}, &agentfleet.Budget{Tokens: -1, ToolCalls: -3}, Budget{MaxTokensPerRun: 5}},
		{"the session bound stays", Budget{MaxTokensPerSession: 10}, &agentfleet.Budget{Tokens: 50}, Budget{MaxTokensPerSession: 10, MaxTokensPerRun: 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.own.Within(tc.in); got != tc.want {
				t.Errorf("Within = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestBudgetLeft(t *testing.T) {
	for _, tc := range []struct {
		name                string
		b                   Budget
		run, session, calls int
		want                *agentfleet.Budget
		exceeded            string
	}{
		{"no bounds", Budget{}, 500, 900, 9, nil, ""},
		{"what the run has left", Budget{MaxTokensPerRun: 100, MaxToolCallsPerRun: 5}, 30, 30, 2, &agentfleet.Budget{Tokens: 70, ToolCalls: 3}, ""},
		{"the session's remainder when lower", Budget{MaxTokensPerRun: 100, MaxTokensPerSession: 200}, 30, 180, 0, &agentfleet.Budget{Tokens: 20}, ""},
		{"the run's remainder when lower", Budget{MaxTokensPerRun: 100, MaxTokensPerSession: 200}, 90, 100, 0, &agentfleet.Budget{Tokens: 10}, ""},
		{"tokens spent", Budget{MaxTokensPerRun: 100}, 100, 100, 1, nil, BudgetTokensPerRun},
		{"session tokens spent", Budget{MaxTokensPerSession: 50}, 10, 60, 1, nil, BudgetTokensPerSession},
		{"the asking call was the last", Budget{MaxToolCallsPerRun: 2}, 0, 0, 2, nil, BudgetToolCallsPerRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, e := tc.b.Left(tc.run, tc.session, tc.calls)
			if name := exceededName(e); name != tc.exceeded {
				t.Fatalf("exceeded %q, want %q", name, tc.exceeded)
			}
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("Left = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func exceededName(e *Exceeded) string {
	if e == nil {
		return ""
	}
	return e.Name
}
