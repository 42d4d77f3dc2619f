package dashboard_test

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/chromedp/chromedp"
)

// TestDashboardCost: in headless Chromium, the sessions table shows what
// each session's runs cost (two runs of 0.0012 and 0.0030 dollars: 0.0042),
// the run view the cost of its run, and a cost budget's notice says the
// dollars used and allowed.
func TestDashboardCost(t *testing.T) {
	f := startFleet(t, dashboard.Options{})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the replay", `document.body.dataset.replayed === 'true'`, 10*time.Second)
	for i, c := range []float64{0.0012, 0.0030} {
		p := &publisher{t: t, nc: f.nc, agent: "default", session: "pricey", run: []string{"run-cheap", "run-dear"}[i], seq: uint64(10 * i)}
		p.pub(agentfleet.Event{Type: agentfleet.EventRunStart, Orchestrator: "o1"})
		p.pub(agentfleet.Event{Type: agentfleet.EventTurnStart, Turn: 1})
		if i == 1 {
			p.pub(agentfleet.Event{Type: agentfleet.EventBudgetExceeded, Turn: 1, Budget: "max_cost_per_run", LimitUSD: 0.0025, UsedUSD: c})
		}
		p.pub(agentfleet.Event{Type: agentfleet.EventRunEnd, Turn: 1, StopReason: agentfleet.StopReasonBudget,
			Message: &agentfleet.AssistantMessage{Role: "assistant", StopReason: agentfleet.StopReasonBudget,
				Usage: &agentfleet.Usage{InputTokens: 1000, OutputTokens: 100, TotalTokens: 1100, Cost: c}}})
	}
	waitJS(t, ctx, "the session's cost", `(document.querySelector('tr.session[data-session="pricey"] td.cost') || {}).textContent === '$0.004200'`, 10*time.Second)
	show(t, ctx, "pricey")
	waitJS(t, ctx, "the run's cost", `document.querySelector('#run[data-session="pricey"] .run-head .cost')`, 5*time.Second)
	if got := evalJS[string](t, ctx, `document.querySelector('#run .run-head .cost').textContent`); got != "$0.003000" {
		t.Errorf("the run's cost shows as %q, want $0.003000", got)
	}
	if got := evalJS[string](t, ctx, `document.querySelector('#run .run-head .cost').title`); got != "this run; the session so far: $0.004200" {
		t.Errorf("the session's cost in the run view: %q", got)
	}
	if got := evalJS[string](t, ctx, `document.querySelector('#run .run-errors .budget').firstChild.textContent`); got != "budget max_cost_per_run exceeded: used $0.003000 of $0.002500" {
		t.Errorf("the cost budget shows as %q", got)
	}
	screenshot(t, ctx, screenshots(t), "cost.png")
}
