package dashboard_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/chromedp/chromedp"
)

// TestDashboardDelegation has agent boss ask agent researcher as a tool
// (ask_researcher) on a real fleet and checks, in headless Chromium, that
// the child run shows nested under boss's call with a link to it, that
// the link opens the child's run, whose head links back to the call, and
// that the link back opens boss's run with the call marked; a child still
// running shows nested as running. Runs whose events carry hostile parents
// (markup, quotes, ids that are no tokens) show no parent, no link and
// nothing of the markup.
func TestDashboardDelegation(t *testing.T) {
	f := startFleet(t, dashboard.Options{})
	ctx := browser(t)
	dir := screenshots(t)

	reply, err := f.nc.Request("agent.ask.boss.plan", []byte("ask researcher echo tall trees"), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var m agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &m); err != nil || m.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("ask boss answered %s (%v)", reply.Data, err)
	}
	if got, want := agentfleet.JoinText(m.Content), "done: done: tall trees"; got != want {
		t.Fatalf("boss answered %q, want %q", got, want)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/#boss%2Fplan")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "boss's run", `document.querySelector('#run[data-agent="boss"][data-status="stop"]')`, 10*time.Second)
	waitJS(t, ctx, "the child run under the call", `document.querySelector('#run .tool[data-tool-call-id="call_ask"] .child-run[data-status="stop"] .child-call')`, 10*time.Second)
	screenshot(t, ctx, dir, "delegation-parent.png")

	type nested struct {
		ParentRun    string `json:"parent_run"`
		ChildRun     string `json:"child_run"`
		ChildAgent   string `json:"child_agent"`
		ChildSession string `json:"child_session"`
		Href         string `json:"href"`
		Text         string `json:"text"`
		Calls        string `json:"calls"`
		RowRun       string `json:"row_run"`
	}
	got := evalJS[nested](t, ctx, `(() => {
		const c = document.querySelector('#run .tool[data-tool-call-id="call_ask"] .child-run');
		const row = document.querySelector('#sessions tr[data-agent="researcher"]');
		return {
			parent_run: document.querySelector('#run').dataset.runId,
			child_run: c.dataset.runId, child_agent: c.dataset.agent, child_session: c.dataset.session,
			href: c.querySelector('a.child-link').getAttribute('href'),
			text: c.querySelector('.text').textContent,
			calls: [...c.querySelectorAll('.child-call')].map((x) => x.textContent).join(','),
			row_run: row ? row.dataset.runId : '',
		};
	})()`)
	if got.ChildAgent != "researcher" || got.ChildRun == "" || got.ChildRun != got.RowRun {
		t.Fatalf("the nested child = %+v, want researcher's run %q", got, got.RowRun)
	}
	if want := "#researcher%2F" + got.ChildSession + "&run=" + got.ChildRun; got.Href != want {
		t.Errorf("the link to the child = %q, want %q", got.Href, want)
	}
	if got.Text != "done: tall trees" || got.Calls != "echo ok" {
		t.Errorf("the nested child shows text %q and calls %q, want %q and %q", got.Text, got.Calls, "done: tall trees", "echo ok")
	}

	// The link each way.
	evalJS[chromedp.Void](t, ctx, `document.querySelector('#run .child-link').click(); undefined`)
	waitJS(t, ctx, "the child's run", `document.querySelector('#run[data-agent="researcher"][data-run-id="`+got.ChildRun+`"] .parent-link')`, 10*time.Second)
	screenshot(t, ctx, dir, "delegation-child.png")
	back := evalJS[map[string]string](t, ctx, `(() => {
		const a = document.querySelector('#run .parent-link');
		return { href: a.getAttribute('href'), fact: document.querySelector('#run .parent').textContent };
	})()`)
	if want := "#boss%2Fplan&run=" + got.ParentRun + "&call=call_ask"; back["href"] != want {
		t.Errorf("the link back = %q, want %q", back["href"], want)
	}
	if want := "asked by boss/plan call call_ask"; back["fact"] != want {
		t.Errorf("the child's head shows %q, want %q", back["fact"], want)
	}
	evalJS[chromedp.Void](t, ctx, `document.querySelector('#run .parent-link').click(); undefined`)
	waitJS(t, ctx, "boss's run with the call marked", `document.querySelector('#run[data-run-id="`+got.ParentRun+`"] .tool.focus[data-tool-call-id="call_ask"]')`, 10*time.Second)
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#run .tool.focus').length`); n != 1 {
		t.Errorf("%d calls marked, want 1", n)
	}

	// A child still running shows nested as running, then as ended.
	if err := f.nc.Publish("agent.in.boss.slow", []byte("ask researcher sleep 1500")); err != nil {
		t.Fatal(err)
	}
	evalJS[chromedp.Void](t, ctx, `location.hash = '#boss%2Fslow'; undefined`)
	waitJS(t, ctx, "the running child under the call", `document.querySelector('#run[data-session="slow"][data-status="running"] .tool[data-tool-call-id="call_ask"] .child-run[data-status="running"]')`, 10*time.Second)
	waitJS(t, ctx, "the child ended under the call", `document.querySelector('#run[data-session="slow"] .child-run[data-status="stop"]')`, 10*time.Second)

	// Hostile parents: each run's events carry one; none may become a
	// link, an element or a script.
	for session, parent := range map[string]*agentfleet.Parent{
		"markup":  {Agent: `<script>window.__pwned = 4</script>`, Session: "plan", RunID: "r1", ToolCallID: "c1"},
		"quotes":  {Agent: "boss", Session: `plan" onmouseover="window.__pwned = 5`, RunID: "r1", ToolCallID: "c1"},
		"run-id":  {Agent: "boss", Session: "plan", RunID: `r1"><img src=x onerror="window.__pwned=6">`, ToolCallID: "c1"},
		"call-id": {Agent: "boss", Session: "plan", RunID: got.ParentRun, ToolCallID: `call_ask&run=x"'<b>`},
	} {
		publishChildRun(t, f, session, parent)
	}
	for _, session := range []string{"markup", "quotes", "run-id", "call-id"} {
		evalJS[chromedp.Void](t, ctx, `location.hash = encodeURIComponent('otel/`+session+`'); undefined`)
		waitJS(t, ctx, "the run of "+session, `document.querySelector('#run[data-session="`+session+`"][data-status="stop"]')`, 10*time.Second)
		shown := evalJS[map[string]any](t, ctx, `({
			parent: document.querySelectorAll('#run .parent, #run a').length,
			bad: document.querySelectorAll('main script, main img, main b').length + (window.__pwned || 0),
			text: document.querySelector('#run').textContent.includes('asked by'),
		})`)
		if shown["parent"] != float64(0) || shown["bad"] != float64(0) || shown["text"] != false {
			t.Errorf("%s: the run shows %v, want no parent, no link and no markup", session, shown)
		}
	}
	// The forged call id names boss's real run: nothing nests under its call.
	evalJS[chromedp.Void](t, ctx, `location.hash = '#boss%2Fplan'; undefined`)
	waitJS(t, ctx, "boss's run", `document.querySelector('#run[data-agent="boss"] .child-run')`, 10*time.Second)
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#run .child-run').length + document.querySelectorAll('main script, main img, main b').length + (window.__pwned || 0)`); n != 1 {
		t.Errorf("boss's run shows %d nested runs and injected elements, want its one child", n)
	}
}

// publishChildRun publishes a made-up run of agent otel in session whose
// every event carries parent, as a forged or broken orchestrator might.
func publishChildRun(t *testing.T, f *testFleet, session string, parent *agentfleet.Parent) {
	t.Helper()
	seq := uint64(0)
	answer := &agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{agentfleet.Text("done")}, StopReason: agentfleet.StopReasonStop}
	for _, e := range []agentfleet.Event{
		{Type: agentfleet.EventRunStart, Orchestrator: "forged"},
		{Type: agentfleet.EventRunEnd, Turn: 1, StopReason: agentfleet.StopReasonStop, Message: answer},
	} {
		seq++
		e.Agent, e.Session, e.RunID, e.Seq, e.Time, e.Parent = "otel", session, "run-"+session, seq, time.Now().UTC(), parent
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.nc.Publish("agent.events.otel."+session+"."+string(e.Type), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}
