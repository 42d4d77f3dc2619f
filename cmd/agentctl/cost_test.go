package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/cost"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

func TestSumCosts(t *testing.T) {
	end := func(agent, session string, in, out int, usd float64) history.RunEnd {
		return history.RunEnd{Agent: agent, Session: session, Final: &agentfleet.AssistantMessage{Usage: &agentfleet.Usage{InputTokens: in, OutputTokens: out, Cost: usd}}}
	}
	rep := sumCosts([]history.RunEnd{
		end("b", "s1", 10, 5, 0.25), end("a", "s2", 1, 1, 0.5), end("a", "s1", 100, 0, 0.125),
		end("a", "s2", 0, 0, 0), {Agent: "a", Session: "s2", Final: &agentfleet.AssistantMessage{}},
	})
	if rep.Total.Runs != 5 || rep.Total.Tokens != 117 || rep.Total.USD != 0.875 {
		t.Errorf("total %+v", rep.Total)
	}
	want := []costRow{{"a", "s1", 1, 100, 0.125}, {"a", "s2", 3, 2, 0.5}, {"b", "s1", 1, 15, 0.25}}
	if len(rep.Sessions) != len(want) {
		t.Fatalf("sessions %+v", rep.Sessions)
	}
	for i := range want {
		if rep.Sessions[i] != want[i] {
			t.Errorf("session %d = %+v, want %+v", i, rep.Sessions[i], want[i])
		}
	}
	if len(rep.Agents) != 2 || rep.Agents[0] != (costRow{"a", "", 4, 102, 0.625}) {
		t.Errorf("agents %+v", rep.Agents)
	}
}

// TestCost: runs of two agents on a priced model are summed from the
// stored history, the sum equal to the costs their answers carried;
// --since leaves out what was stored before.
func TestCost(t *testing.T) {
	priced := &cost.Model{Next: llm.Offline{}, Default: llm.OfflineName,
		Prices: map[string]cost.Price{llm.OfflineName: {Input: 3, Output: 15}}}
	url := startFleetModel(t, []orchestrator.Profile{{Name: "alpha"}, {Name: "beta"}}, priced)
	var want float64
	for _, a := range []struct{ agent, session, text string }{
		{"alpha", "s1", "echo one"}, {"alpha", "s1", "echo two"}, {"alpha", "s2", "what is 2+2?"}, {"beta", "s1", "echo three"},
	} {
		stdout, stderr, err := run(t, url, "ask", "--json", a.agent, a.session, a.text)
		if err != nil {
			t.Fatalf("ask: %v %s", err, stderr)
		}
		var final agentfleet.AssistantMessage
		if err := json.Unmarshal([]byte(stdout), &final); err != nil {
			t.Fatal(err)
		}
		if final.Usage == nil || final.Usage.Cost <= 0 {
			t.Fatalf("answer of %s without a cost: %+v", a.agent, final.Usage)
		}
		want += final.Usage.Cost
	}
	stdout, stderr, err := run(t, url, "cost", "--json")
	if err != nil {
		t.Fatalf("cost: %v %s", err, stderr)
	}
	var rep costReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%q: %v", stdout, err)
	}
	if rep.Total.Runs != 4 || math.Abs(rep.Total.USD-want) > 1e-12 || len(rep.Agents) != 2 || len(rep.Sessions) != 3 {
		t.Errorf("report %+v, want 4 runs costing %v", rep, want)
	}
	stdout, _, err = run(t, url, "cost", "alpha")
	if err != nil || !strings.Contains(stdout, "alpha  s2 ") || strings.Contains(stdout, "beta") || !strings.Contains(stdout, "total") {
		t.Errorf("cost alpha: %v\n%s", err, stdout)
	}
	stdout, _, err = run(t, url, "cost", "--json", "--since", "1ms")
	if err != nil || !strings.Contains(stdout, `"runs": 0`) {
		t.Errorf("cost --since 1ms: %v\n%s", err, stdout)
	}
}
