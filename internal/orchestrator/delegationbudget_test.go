package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/delegate"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/window"
)

// spender is the team whose every model response reports 15 tokens.
type spender struct{ *team }

func (s spender) Complete(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	m, err := s.team.Complete(ctx, req, onDelta)
	if m != nil {
		m.Usage = &agentfleet.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}
	}
	return m, err
}

func budgetFleet(t *testing.T, durable bool, profiles ...orchestrator.Profile) *testFleet {
	t.Helper()
	return startFleet(t, orchestrator.Config{Model: spender{newTeam()}, Durable: durable, Profiles: profiles})
}

func budgetEvent(f *testFleet, agent string) func(agentfleet.Event) bool {
	return func(e agentfleet.Event) bool { return e.Type == agentfleet.EventBudgetExceeded && e.Agent == agent }
}

// TestChildInheritsBudget: a child's run is held within what its parent's
// run has left (boss, 40 tokens a run, spent 15 asking, so researcher may
// spend 25 though its own profile sets no bound), and the child's usage
// counts toward the parent's: researcher spends 15 and coder's 15 counts
// toward it, so it stops at 30 of its 25; boss's run then has spent 45
// (its own 15 and researcher's 30) of its 40 and stops before another
// model call, with that usage on its final message.
func TestChildInheritsBudget(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(mode(durable), func(t *testing.T) {
			f := budgetFleet(t, durable,
				orchestrator.Profile{Name: "boss", Agents: []string{"researcher"}, MaxTokensPerRun: 40},
				orchestrator.Profile{Name: "researcher", Agents: []string{"coder"}},
				orchestrator.Profile{Name: "coder"})
			final := f.ask(t, "boss", "s1", `{"content":"via researcher coder: find trees"}`)
			if final.StopReason != agentfleet.StopReasonBudget {
				t.Fatalf("boss stopped with %s (%q), want %s", final.StopReason, agentfleet.JoinText(final.Content), agentfleet.StopReasonBudget)
			}
			if got, want := window.TokensOf(final.Usage), 45; got != want {
				t.Errorf("boss's usage %d tokens, want %d (its own and its children's)", got, want)
			}
			start := f.events.wait(t, "researcher's run.start", runStart(f, "researcher"))
			if b := start.Parent.Budget; b == nil || b.Tokens != 25 || b.ToolCalls != 0 {
				t.Errorf("researcher's parent budget %+v, want 25 tokens", b)
			}
			coder := f.events.wait(t, "coder's run.start", runStart(f, "coder"))
			if b := coder.Parent.Budget; b == nil || b.Tokens != 10 {
				t.Errorf("coder's parent budget %+v, want 10 tokens", b)
			}
			child := f.events.wait(t, "researcher's budget.exceeded", budgetEvent(f, "researcher"))
			if child.Budget != window.BudgetTokensPerRun || child.Limit != 25 || child.Used != 30 {
				t.Errorf("researcher's budget.exceeded %s %d/%d, want %s 30/25", child.Budget, child.Used, child.Limit, window.BudgetTokensPerRun)
			}
			end := f.events.wait(t, "boss's tool.end", func(e agentfleet.Event) bool {
				return e.Type == agentfleet.EventToolEnd && e.Agent == "boss"
			})
			if !end.IsError || end.Result == nil || !strings.Contains(agentfleet.JoinText(end.Result.Content), "agent researcher stopped with budget") {
				t.Errorf("boss's tool.end error %v, result %+v", end.IsError, end.Result)
			}
			parent := f.events.wait(t, "boss's budget.exceeded", budgetEvent(f, "boss"))
			if parent.Limit != 40 || parent.Used != 45 {
				t.Errorf("boss's budget.exceeded %d/%d, want 45/40", parent.Used, parent.Limit)
			}
		})
	}
}

// TestChildBudgetToolCalls: a parent with one tool call left after the ask
// gives its child that one; a parent whose ask was its last tool call does
// not ask at all.
func TestChildBudgetToolCalls(t *testing.T) {
	f := budgetFleet(t, false,
		orchestrator.Profile{Name: "boss", Agents: []string{"researcher"}, MaxToolCallsPerRun: 2},
		orchestrator.Profile{Name: "last", Agents: []string{"researcher"}, MaxToolCallsPerRun: 1},
		orchestrator.Profile{Name: "researcher", Agents: []string{"coder"}, MaxToolCallsPerRun: 9},
		orchestrator.Profile{Name: "coder"})
	f.ask(t, "boss", "s1", `{"content":"via researcher: hi"}`)
	start := f.events.wait(t, "researcher's run.start", runStart(f, "researcher"))
	if b := start.Parent.Budget; b == nil || b.ToolCalls != 1 || b.Tokens != 0 {
		t.Errorf("researcher's parent budget %+v, want 1 tool call", b)
	}
	final := f.ask(t, "last", "s2", `{"content":"via researcher: hi"}`)
	if got, want := agentfleet.JoinText(final.Content), "ask_researcher!Tool ask_researcher: refused: agent researcher was not asked, the run stopped at its budget max_tool_calls_per_run of 1 tool calls (used 1)"; got != want {
		t.Errorf("last answered %q, want %q", got, want)
	}
}

// TestForgedBudgetHeaders: a budget header may lower a child's budget and
// never raise it above its own profile's; a malformed one is refused with
// an error naming it.
func TestForgedBudgetHeaders(t *testing.T) {
	f := budgetFleet(t, true,
		orchestrator.Profile{Name: "researcher", Agents: []string{"coder"}, MaxTokensPerRun: 20},
		orchestrator.Profile{Name: "coder"})
	parent := delegate.Encode(&agentfleet.Parent{Agent: "boss", Session: "s", RunID: "r", ToolCallID: "c", Chain: []string{"boss"}})
	ask := func(t *testing.T, session string, h map[string]string) agentfleet.AssistantMessage {
		t.Helper()
		for k, v := range parent {
			h[k] = v
		}
		reply, err := f.nc.RequestMsg(natsMsg("agent.ask.researcher."+session, `{"content":"via coder: x"}`, h), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var a agentfleet.AssistantMessage
		json.Unmarshal(reply.Data, &a)
		return a
	}
	a := ask(t, "raise", map[string]string{delegate.HeaderBudgetTokens: "1000000"})
	if a.StopReason != agentfleet.StopReasonBudget {
		t.Errorf("a raised budget: stopped with %s, want %s", a.StopReason, agentfleet.StopReasonBudget)
	}
	e := f.events.wait(t, "budget.exceeded of raise", func(e agentfleet.Event) bool {
		return e.Type == agentfleet.EventBudgetExceeded && e.Session == "raise"
	})
	if e.Limit != 20 {
		t.Errorf("a header of 1000000 tokens: limit %d, want the profile's 20", e.Limit)
	}
	a = ask(t, "lower", map[string]string{delegate.HeaderBudgetTokens: "5"})
	e = f.events.wait(t, "budget.exceeded of lower", func(e agentfleet.Event) bool {
		return e.Type == agentfleet.EventBudgetExceeded && e.Session == "lower"
	})
	if a.StopReason != agentfleet.StopReasonBudget || e.Limit != 5 {
		t.Errorf("a header of 5 tokens: %s, limit %d, want budget at 5", a.StopReason, e.Limit)
	}
	for _, tc := range []struct{ name, header, value, want string }{
		{"garbage", delegate.HeaderBudgetTokens, "lots", `header Agentfleet-Parent-Budget-Tokens: byte 1 of "lots" is not a decimal digit`},
		{"oversized", delegate.HeaderBudgetToolCalls, strings.Repeat("7", 3000), "header Agentfleet-Parent-Budget-Tool-Calls: value is 3000 bytes long, the limit is 13"},
		{"zero", delegate.HeaderBudgetToolCalls, "0", "header Agentfleet-Parent-Budget-Tool-Calls: value 0 is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ask(t, "bad"+tc.name, map[string]string{tc.header: tc.value})
			if a.StopReason != agentfleet.StopReasonError || !strings.Contains(a.ErrorMessage, tc.want) {
				t.Errorf("answer %s %q, want an error with %q", a.StopReason, a.ErrorMessage, tc.want)
			}
		})
	}
}
