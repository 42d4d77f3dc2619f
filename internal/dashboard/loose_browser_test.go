package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
)

// publisher publishes made-up events of one run as an orchestrator does,
// on agent.events.<agent>.<session>.<type>, numbering them.
type publisher struct {
	t                   *testing.T
	nc                  *nats.Conn
	agent, session, run string
	seq                 uint64
}

func (p *publisher) pub(e agentfleet.Event) {
	p.t.Helper()
	p.seq++
	e.Agent, e.Session, e.RunID, e.Seq = p.agent, p.session, p.run, p.seq
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := p.nc.Publish("agent.events."+p.agent+"."+p.session+"."+string(e.Type), b); err != nil {
		p.t.Fatal(err)
	}
	if err := p.nc.Flush(); err != nil {
		p.t.Fatal(err)
	}
}

// TestDashboardLooseEnds checks, in headless Chromium on a real fleet,
// each of the dashboard's fixes: a direct call (agentctl mcp's
// agent.call) ends ok with no Abort; errors outside a run show where they
// belong, dismissible, and stay dismissed across a reload; a call waiting
// for approval says so once, with a growing duration, in an inbox that
// lists it with its deadline while its session is marked, and a contrary
// decision after it was decided shows in its session; worker ids are
// whole; a retry after a lost worker is shown; favicon.ico is served; a
// replayed context.compacted and budget.exceeded are shown.
func TestDashboardLooseEnds(t *testing.T) {
	f := startFleet(t, dashboard.Options{})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the replay", `document.body.dataset.replayed === 'true'`, 10*time.Second)

	t.Run("direct call ends", func(t *testing.T) {
		subjects, _ := bus.NewSubjects("")
		reply, err := client.CallAgentTool(context.Background(), bustest.MustConnect(t, f.srv), subjects, "default", "mcp-1a2b3c4d",
			&client.CallRequestJSON{ID: "mcp-call-1", Name: "echo", Arguments: map[string]any{"text": "direct"}}, nil, 15*time.Second)
		if err != nil || reply.IsError {
			t.Fatalf("direct call: %+v, %v", reply, err)
		}
		waitJS(t, ctx, "the call's session ended ok", `document.querySelector('tr.session[data-session="mcp-1a2b3c4d"][data-status="stop"][data-kind="direct"]')`, 10*time.Second)
		show(t, ctx, "mcp-1a2b3c4d")
		waitJS(t, ctx, "its run view", `document.querySelector('#run[data-session="mcp-1a2b3c4d"][data-status="stop"] .tool[data-outcome="ok"]')`, 5*time.Second)
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#abort-button').length`); n != 0 {
			t.Errorf("a direct call that ended shows %d Abort buttons", n)
		}
		if head := evalJS[string](t, ctx, `document.querySelector('#run .run-head').textContent`); !contains(head, "direct call") {
			t.Errorf("the head %q does not say it is a direct call", head)
		}
	})

	t.Run("errors where they belong", func(t *testing.T) {
		if m := f.ask(t, "witherr", "echo hi"); m.StopReason != agentfleet.StopReasonStop {
			t.Fatalf("ask: %s", m.StopReason)
		}
		// A message to an agent no orchestrator has: the input is rejected
		// with an error event of a session the page has no run of.
		if err := f.nc.Publish("agent.in.nosuch.x", []byte("hello")); err != nil {
			t.Fatal(err)
		}
		(&publisher{t: t, nc: f.nc, agent: "default", session: "witherr"}).pub(agentfleet.Event{Type: agentfleet.EventError, ErrorMessage: "decision on call_echo: decided already"})
		waitJS(t, ctx, "the unknown agent in the banner", `[...document.querySelectorAll('#errors p.error')].some((p) => p.textContent.includes('unknown agent'))`, 10*time.Second)
		if b := evalJS[string](t, ctx, `document.querySelector('#errors').textContent`); contains(b, "decided already") {
			t.Errorf("the banner %q holds the error of a session the page has a run of", b)
		}
		show(t, ctx, "witherr")
		waitJS(t, ctx, "the session's error in its view", `document.querySelector('#run[data-session="witherr"] .session-errors p.error')`, 5*time.Second)
		// Dismiss both, then reload: they stay dismissed.
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#run .session-errors .dismiss').click(); undefined`)
		waitJS(t, ctx, "the session's error gone", `!document.querySelector('#run .session-errors')`, 5*time.Second)
		evalJS[chromedp.Void](t, ctx, `[...document.querySelectorAll('#errors p.error')].find((p) => p.textContent.includes('unknown agent')).querySelector('.dismiss').click(); undefined`)
		waitJS(t, ctx, "the banner's error gone", `![...document.querySelectorAll('#errors p.error')].some((p) => p.textContent.includes('unknown agent'))`, 5*time.Second)
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the replay after the reload", `document.body.dataset.replayed === 'true' && document.querySelector('tr.session[data-session="witherr"]')`, 10*time.Second)
		show(t, ctx, "witherr")
		waitJS(t, ctx, "the run view", `document.querySelector('#run[data-session="witherr"]')`, 5*time.Second)
		if got := evalJS[string](t, ctx, `document.querySelector('#errors').textContent + '|' + document.querySelector('#run').textContent`); contains(got, "unknown agent") || contains(got, "decided already") {
			t.Errorf("dismissed errors are back after a reload: %q", got)
		}
	})

	t.Run("approval waits once, inbox", func(t *testing.T) {
		if err := f.nc.Publish("agent.in.guarded.inbox", []byte("echo if you may")); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the inbox entry", `document.querySelector('#approvals li.pending[data-agent="guarded"][data-session="inbox"] .deadline')`, 10*time.Second)
		waitJS(t, ctx, "the session marked", `document.querySelector('tr.session[data-agent="guarded"][data-session="inbox"][data-waiting="1"] .waiting-badge')`, 5*time.Second)
		if d := evalJS[string](t, ctx, `document.querySelector('#approvals li.pending .deadline').textContent`); !regexp.MustCompile(`^deadline \d\d:\d\d:\d\d \(in (\d+m )?\d+s\)$`).MatchString(d) {
			t.Errorf("the inbox shows the deadline as %q", d)
		}
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#approvals li.pending a').click(); undefined`)
		waitJS(t, ctx, "the waiting call", `document.querySelector('#run[data-session="inbox"] .tool[data-outcome="waiting"] .approve-button')`, 5*time.Second)
		label := evalJS[string](t, ctx, `document.querySelector('#run .tool[data-outcome="waiting"] .tool-label').textContent`)
		if strings.Count(label, "waiting for approval") != 1 || contains(label, "running") {
			t.Errorf("the waiting call's label = %q, want its state once", label)
		}
		screenshot(t, ctx, screenshots(t), "inbox.png")
		first := evalJS[string](t, ctx, `document.querySelector('#run .tool[data-outcome="waiting"] .duration').textContent`)
		waitJS(t, ctx, "the duration to grow", `document.querySelector('#run .tool[data-outcome="waiting"] .duration').textContent !== `+jsString(first), 5*time.Second)
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#run .approve-button').click(); undefined`)
		waitJS(t, ctx, "the approved run's end", `document.querySelector('#run[data-session="inbox"][data-status="stop"] .tool[data-outcome="ok"]')`, 10*time.Second)
		waitJS(t, ctx, "the inbox empty", `document.querySelector('#approvals').hidden && !document.querySelector('tr.session[data-session="inbox"][data-waiting]')`, 5*time.Second)
		// A contrary decision on the call decided already, from another
		// client: the orchestrator refuses it with an error event outside
		// any run, which shows in the session's view.
		callID := evalJS[string](t, ctx, `document.querySelector('#run .tool[data-tool="echo"]').dataset.toolCallId`)
		body := `{"agent":"guarded","session":"inbox","tool_call_id":` + jsString(callID) + `,"approve":false}`
		req, _ := http.NewRequest("POST", f.url+"/api/approve", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if res, err := http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		} else {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			t.Logf("a second decision: %s %s", res.Status, b)
		}
		waitJS(t, ctx, "the refused decision in the session's view", `document.querySelector('#run[data-session="inbox"] .session-errors p.error')`, 10*time.Second)
		if b := evalJS[string](t, ctx, `document.querySelector('#errors').hidden ? '' : document.querySelector('#errors').textContent`); contains(b, "inbox") {
			t.Errorf("the banner shows the session's error: %q", b)
		}
		if got := evalJS[string](t, ctx, `document.querySelector('#run .session-errors').textContent`); !contains(got, "was already decided") {
			t.Errorf("the session's error shows as %q", got)
		}
	})

	t.Run("whole worker ids", func(t *testing.T) {
		res, err := http.Get(f.url + "/api/fleet")
		if err != nil {
			t.Fatal(err)
		}
		var fl struct {
			Workers []struct{ ID, Name string }
		}
		err = json.NewDecoder(res.Body).Decode(&fl)
		res.Body.Close()
		if err != nil || len(fl.Workers) == 0 {
			t.Fatalf("fleet: %v %+v", err, fl)
		}
		full := fl.Workers[0].Name + "/" + fl.Workers[0].ID
		show(t, ctx, "witherr")
		waitJS(t, ctx, "the call's worker", `document.querySelector('#run[data-session="witherr"] .tool .worker')`, 5*time.Second)
		if got := evalJS[string](t, ctx, `(() => { const w = document.querySelector('#run .tool .worker'); return w.querySelector('code').textContent + '|' + w.title; })()`); got != full+"|worker "+full {
			t.Errorf("the run view shows the worker as %q, want %q whole, and on hover", got, full)
		}
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#tab-fleet').click(); undefined`)
		waitJS(t, ctx, "the worker row", `document.querySelector('#fleet tr.worker td.worker-id')`, 10*time.Second)
		if got := evalJS[string](t, ctx, `(() => { const td = document.querySelector('#fleet tr.worker td.worker-id'); return td.querySelector('code').textContent + '|' + td.title + '|' + (td.scrollWidth <= td.clientWidth); })()`); got != full+"|"+full+"|true" {
			t.Errorf("the fleet view shows the worker as %q, want %q whole and not cut", got, full)
		}
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#tab-sessions').click(); undefined`)
	})

	t.Run("retry after a lost worker", func(t *testing.T) {
		p := &publisher{t: t, nc: f.nc, agent: "default", session: "retried", run: "run-retried"}
		p.pub(agentfleet.Event{Type: agentfleet.EventRunStart, Orchestrator: "o1"})
		p.pub(agentfleet.Event{Type: agentfleet.EventTurnStart, Turn: 1})
		p.pub(agentfleet.Event{Type: agentfleet.EventToolStart, Turn: 1, ToolCallID: "c1", ToolName: "lookup", Arguments: map[string]any{}})
		p.pub(agentfleet.Event{Type: agentfleet.EventToolUpdate, Turn: 1, ToolCallID: "c1", ToolName: "lookup",
			Partial: map[string]any{"retry": map[string]any{"attempt": 2, "reason": "worker lost: no heartbeat for 3s", "worker": "toolworker/NUIDPREFIXAAAA0000000001"}}})
		p.pub(agentfleet.Event{Type: agentfleet.EventToolEnd, Turn: 1, ToolCallID: "c1", ToolName: "lookup", Result: agentfleet.TextResult("found"),
			Outcome: "ok", DurationMS: 3200, Worker: "toolworker/NUIDPREFIXAAAA0000000002", Attempt: 2})
		p.pub(agentfleet.Event{Type: agentfleet.EventToolStart, Turn: 1, ToolCallID: "c2", ToolName: "write", Arguments: map[string]any{}})
		p.pub(agentfleet.Event{Type: agentfleet.EventToolEnd, Turn: 1, ToolCallID: "c2", ToolName: "write", Result: agentfleet.TextResult("worker lost"),
			IsError: true, Outcome: "worker_lost", DurationMS: 3000, Worker: "toolworker/NUIDPREFIXAAAA0000000001", Attempt: 1})
		show(t, ctx, "retried")
		waitJS(t, ctx, "the run", `document.querySelector('#run[data-session="retried"] .tool[data-tool="write"][data-outcome="worker_lost"]')`, 10*time.Second)
		retry := evalJS[string](t, ctx, `document.querySelector('#run .tool[data-tool="lookup"] .retry').textContent`)
		for _, want := range []string{"attempt 2", "toolworker/NUIDPREFIXAAAA0000000001", "was lost", "no heartbeat"} {
			if !contains(retry, want) {
				t.Errorf("the retry line %q lacks %q", retry, want)
			}
		}
		if a := evalJS[string](t, ctx, `document.querySelector('#run .tool[data-tool="lookup"] .attempt.retried').textContent`); a != "attempt 2" {
			t.Errorf("the retried call's attempt = %q", a)
		}
		if o := evalJS[string](t, ctx, `document.querySelector('#run .tool[data-tool="write"] .outcome').textContent`); o != "worker lost" {
			t.Errorf("the lost call's outcome = %q, want worker lost", o)
		}
	})

	t.Run("favicon", func(t *testing.T) {
		res, err := http.Get(f.url + "/favicon.ico")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "image/") || len(b) < 22 || string(b[:4]) != "\x00\x00\x01\x00" {
			t.Errorf("favicon.ico: %s %q, %d bytes", res.Status, res.Header.Get("Content-Type"), len(b))
		}
		evalJS[chromedp.Void](t, ctx, `window.__icon = 0; fetch(document.querySelector('link[rel="icon"]').href).then((r) => { window.__icon = r.status; }); undefined`)
		waitJS(t, ctx, "the page's icon", `window.__icon !== 0`, 5*time.Second)
		if s := evalJS[int](t, ctx, `window.__icon`); s != 200 {
			t.Errorf("the page's icon answers %d", s)
		}
	})

	t.Run("compaction and budget replayed", func(t *testing.T) {
		p := &publisher{t: t, nc: f.nc, agent: "default", session: "squeezed", run: "run-squeezed"}
		p.pub(agentfleet.Event{Type: agentfleet.EventRunStart, Orchestrator: "o1"})
		p.pub(agentfleet.Event{Type: agentfleet.EventTurnStart, Turn: 1})
		p.pub(agentfleet.Event{Type: agentfleet.EventMessageStart, Turn: 1})
		p.pub(agentfleet.Event{Type: agentfleet.EventContextCompacted, Turn: 1, Strategy: "truncate", Reason: "window",
			DroppedTurns: 3, DroppedMessages: 7, ShortenedResults: 2, TokensBefore: 9000, TokensAfter: 4000})
		p.pub(agentfleet.Event{Type: agentfleet.EventBudgetExceeded, Turn: 1, Budget: "max_tokens_per_run", Limit: 1000, Used: 1234})
		p.pub(agentfleet.Event{Type: agentfleet.EventRunEnd, Turn: 1, StopReason: agentfleet.StopReasonError,
			Message: &agentfleet.AssistantMessage{Role: "assistant", StopReason: agentfleet.StopReasonError, ErrorMessage: "budget max_tokens_per_run exceeded"}})
		// A new page: the events come by replay.
		if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/#"+"default%2Fsqueezed")); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the replayed run", `document.body.dataset.replayed === 'true' && document.querySelector('#run[data-session="squeezed"] .compacted')`, 10*time.Second)
		screenshot(t, ctx, screenshots(t), "compacted.png")
		if got := evalJS[string](t, ctx, `document.querySelector('#run .turn[data-turn="1"] .compacted').textContent`); got != "context compacted (truncate, window): left out 3 turns (7 messages), shortened 2 tool results, ~9000 → ~4000 tokens" {
			t.Errorf("the compaction shows as %q", got)
		}
		if got := evalJS[string](t, ctx, `document.querySelector('#run .run-errors .budget').textContent`); got != "budget max_tokens_per_run exceeded: used 1234 of 1000" {
			t.Errorf("the budget shows as %q", got)
		}
	})
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
