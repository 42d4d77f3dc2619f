package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
)

// browser starts a headless Chromium for the test and returns a context of
// its one tab. It skips the test when no Chromium is installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome or headless-shell on PATH): install Debian's chromium to run the browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1400, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// Do with no step starts the browser and opens the tab.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx
}

// screenshots returns the folder the screenshots go to:
// $AGENTFLEET_SCREENSHOTS, else a folder of the test's.
func screenshots(t *testing.T) string {
	dir := os.Getenv("AGENTFLEET_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

// waitJS waits until the JavaScript expression is truthy, checking at
// every frame, for up to timeout.
func waitJS(t *testing.T, ctx context.Context, what, expr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(time.Until(deadline))))
		// A poll that began as the document changed (just after a
		// navigation) loses its execution context: poll again in the new one.
		if err != nil && (strings.Contains(err.Error(), "Cannot find context with specified id") || strings.Contains(err.Error(), "Inspected target navigated or closed")) && time.Now().Before(deadline) {
			continue
		}
		if err == nil {
			return
		}
		dom, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText.slice(0, 2000)`))
		t.Fatalf("waiting for %s (%s): %v\nthe page shows:\n%s", what, expr, err, dom)
	}
}

func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// show selects a session in the page, as a link to it does.
func show(t *testing.T, ctx context.Context, session string) {
	t.Helper()
	evalJS[chromedp.Void](t, ctx, `location.hash = encodeURIComponent('default/`+session+`'); undefined`)
}

// TestDashboardInBrowser opens the dashboard of a real fleet in headless
// Chromium and checks, on the page's DOM: a run from before the page
// loaded appears through replay; a run started after appears with its tool
// call bar within 1 s; Abort on the page ends a running run with aborted;
// a tool result holding markup is shown as text and runs nothing; the
// fleet view lists the worker. It writes screenshots of the views.
func TestDashboardInBrowser(t *testing.T) {
	f := startFleet(t, dashboard.Options{})
	ctx := browser(t)
	dir := screenshots(t)

	// Before the page: a run it must replay.
	if m := f.ask(t, "before", "echo from before the page"); m.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("ask before: %s", m.StopReason)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the replay", `document.body.dataset.replayed === 'true'`, 10*time.Second)

	t.Run("replay", func(t *testing.T) {
		waitJS(t, ctx, "the run from before the page", `document.querySelector('tr.session[data-session="before"][data-status="stop"]')`, 5*time.Second)
		show(t, ctx, "before")
		waitJS(t, ctx, "its tool call", `document.querySelector('#run[data-session="before"] .tool[data-tool="echo"][data-outcome="ok"] .bar')`, 5*time.Second)
	})

	t.Run("live within 1s", func(t *testing.T) {
		show(t, ctx, "live")
		start := time.Now()
		f.send(t, "live", "echo live from NATS")
		waitJS(t, ctx, "the live run's tool call bar", `document.querySelector('#run[data-session="live"] .tool[data-tool="echo"][data-outcome="ok"] .bar')`, 5*time.Second)
		elapsed := time.Since(start)
		t.Logf("a run sent on NATS showed its finished tool call bar %v later", elapsed.Round(time.Millisecond))
		if elapsed > time.Second {
			t.Errorf("the run took %v to appear with its tool call, want within 1s", elapsed)
		}
		waitJS(t, ctx, "the run's end", `document.querySelector('#run[data-session="live"][data-status="stop"]')`, 5*time.Second)
		label := evalJS[string](t, ctx, `document.querySelector('#run[data-session="live"] .tool[data-tool="echo"] .tool-label').textContent`)
		for _, want := range []string{"echo", "ok", "ms", "worker toolworker/"} {
			if !contains(label, want) {
				t.Errorf("tool label %q lacks %q", label, want)
			}
		}
		if text := evalJS[string](t, ctx, `document.querySelector('#run[data-session="live"] .turn .text').textContent`); text != "calling echo" {
			t.Errorf("the first turn's text = %q, want the streamed %q", text, "calling echo")
		}
		if tok := evalJS[string](t, ctx, `document.querySelector('#run[data-session="live"] .tokens').textContent`); !contains(tok, "50 tokens") {
			t.Errorf("tokens = %q, want the run's 50", tok)
		}
		screenshot(t, ctx, dir, "run.png")
	})

	t.Run("abort from the page", func(t *testing.T) {
		show(t, ctx, "slow")
		f.send(t, "slow", "sleep 30000")
		waitJS(t, ctx, "the running sleep", `document.querySelector('#run[data-session="slow"][data-status="running"] .tool[data-tool="sleep"]') && document.querySelector('#abort-button')`, 10*time.Second)
		waitJS(t, ctx, "its progress", `document.querySelector('#run[data-session="slow"] .tool[data-tool="sleep"] .progress')`, 5*time.Second)
		start := time.Now()
		// Clicked in the page: the sleep's progress rebuilds the run view,
		// which would leave a node found by chromedp stale before its click.
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#abort-button').click(); undefined`)
		waitJS(t, ctx, "the aborted run", `document.querySelector('#run[data-session="slow"][data-status="aborted"]')`, 10*time.Second)
		t.Logf("aborted %v after the click", time.Since(start).Round(time.Millisecond))
		if s := evalJS[string](t, ctx, `document.querySelector('#run[data-session="slow"] .stop-reason').textContent`); s != "aborted" {
			t.Errorf("stop reason shown = %q, want aborted", s)
		}
		if o := evalJS[string](t, ctx, `document.querySelector('#run[data-session="slow"] .tool[data-tool="sleep"]').dataset.outcome`); o != "aborted" {
			t.Errorf("the sleep call's outcome = %q, want aborted", o)
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#run[data-session="slow"] .run-errors p').length`); n == 0 {
			t.Error("the aborted run shows no error first")
		}
	})

	t.Run("approve from the page", func(t *testing.T) {
		evalJS[chromedp.Void](t, ctx, `location.hash = encodeURIComponent('guarded/appr'); undefined`)
		if err := f.nc.Publish("agent.in.guarded.appr", []byte("echo if you may")); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the call waiting with its buttons", `document.querySelector('#run[data-session="appr"][data-status="running"] .tool[data-tool="echo"] .approval[data-decision="pending"] .approve-button')`, 10*time.Second)
		// Clicked from the page itself: the run view is rebuilt at every
		// event, so a node looked up first may be gone by the click.
		evalJS[chromedp.Void](t, ctx, `document.querySelector('#run .approve-button').click(); undefined`)
		waitJS(t, ctx, "the approved call's end", `document.querySelector('#run[data-session="appr"][data-status="stop"] .tool[data-tool="echo"][data-outcome="ok"] .approval[data-decision="approved"]')`, 10*time.Second)
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#run .approve-button, #run .reject-button').length`); n != 0 {
			t.Errorf("%d approval buttons left after the decision", n)
		}
	})

	t.Run("markup is text", func(t *testing.T) {
		show(t, ctx, "xss")
		f.send(t, "xss", "script")
		waitJS(t, ctx, "the result", `document.querySelector('#run[data-session="xss"][data-status="stop"] .tool-result pre')`, 10*time.Second)
		var got struct {
			Result string `json:"result"`
			Text   string `json:"text"`
			Nodes  int    `json:"nodes"`
			Pwned  int    `json:"pwned"`
		}
		got = evalJS[struct {
			Result string `json:"result"`
			Text   string `json:"text"`
			Nodes  int    `json:"nodes"`
			Pwned  int    `json:"pwned"`
		}](t, ctx, `({
			result: document.querySelector('#run[data-session="xss"] .tool-result pre').textContent,
			text: [...document.querySelectorAll('#run[data-session="xss"] .turn .text')].map((e) => e.textContent).join('|'),
			nodes: document.querySelectorAll('main script, main img').length,
			pwned: window.__pwned || 0,
		})`)
		if got.Result != xssText {
			t.Errorf("the result shown = %q, want the text %q", got.Result, xssText)
		}
		if !contains(got.Text, xssText) {
			t.Errorf("the model's text shown = %q, want it to hold %q", got.Text, xssText)
		}
		if got.Nodes != 0 || got.Pwned != 0 {
			t.Errorf("the markup became %d elements and ran (window.__pwned = %d)", got.Nodes, got.Pwned)
		}
	})

	t.Run("failures first", func(t *testing.T) {
		show(t, ctx, "both")
		f.send(t, "both", "both")
		waitJS(t, ctx, "the run's end", `document.querySelector('#run[data-session="both"][data-status="stop"]')`, 10*time.Second)
		if n := evalJS[int](t, ctx, `document.querySelectorAll('#run[data-session="both"] .tool').length`); n != 3 {
			t.Errorf("the run shows %d tool calls, want 3", n)
		}
		first := evalJS[string](t, ctx, `document.querySelector('#run[data-session="both"] .run-errors p').textContent`)
		if !contains(first, "fail (error)") || !contains(first, "the service behind this tool is down") {
			t.Errorf("the first error shown = %q, want the failed call", first)
		}
		// The errors come before the timeline.
		if !evalJS[bool](t, ctx, `!!(document.querySelector('#run[data-session="both"] .run-errors').compareDocumentPosition(document.querySelector('#run[data-session="both"] .turn')) & Node.DOCUMENT_POSITION_FOLLOWING)`) {
			t.Error("the errors are not shown before the turns")
		}
		if !evalJS[bool](t, ctx, `document.querySelector('#run[data-session="both"] .tool[data-tool="fail"]').classList.contains('failed')`) {
			t.Error("the failed call is not marked failed")
		}
		screenshot(t, ctx, dir, "dashboard.png")
	})

	t.Run("fleet", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#tab-fleet"))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the worker", `document.querySelector('#fleet tr.worker')`, 10*time.Second)
		row := evalJS[string](t, ctx, `document.querySelector('#fleet tr.worker').textContent`)
		for _, want := range []string{"toolworker/", "echo, fail, file, sleep", "/ 8"} {
			if !contains(row, want) {
				t.Errorf("worker row %q lacks %q", row, want)
			}
		}
		screenshot(t, ctx, dir, "fleet.png")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#tab-sessions"))); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDashboardStaysResponsive publishes 10,000 events (500 runs of 20)
// to a page that keeps at most 100 runs, then times filtering the
// sessions: the page must keep its cap and answer quickly.
func TestDashboardStaysResponsive(t *testing.T) {
	f := startFleet(t, dashboard.Options{ReadOnly: true})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/?max_runs=100&since=0")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the stream", `document.body.dataset.replayed === 'true'`, 10*time.Second)

	const runs, perRun = 500, 20
	start := time.Now()
	publishRuns(t, f.nc, runs)
	waitJS(t, ctx, "every event", `Number(document.body.dataset.events) >= `+strconv.Itoa(runs*perRun), 60*time.Second)
	t.Logf("%d events published and counted by the page in %v", runs*perRun, time.Since(start).Round(time.Millisecond))
	if n := evalJS[int](t, ctx, `Number(document.body.dataset.events)`); n != runs*perRun {
		t.Errorf("the page counted %d events, want %d", n, runs*perRun)
	}
	if n := evalJS[int](t, ctx, `Number(document.body.dataset.runs)`); n != 100 {
		t.Errorf("the page keeps %d runs, want its cap of 100", n)
	}

	type timing struct {
		MS   float64 `json:"ms"`
		Rows int     `json:"rows"`
	}
	t0 := time.Now()
	got := evalJS[timing](t, ctx, `(() => {
		const t0 = performance.now();
		const f = document.getElementById('filter-session');
		f.value = 's49';
		f.dispatchEvent(new Event('input'));
		const rows = document.querySelectorAll('#sessions tbody tr').length;
		return { ms: performance.now() - t0, rows };
	})()`)
	roundTrip := time.Since(t0)
	t.Logf("filtering %d sessions took %.1f ms in the page, %v for the round trip", 100, got.MS, roundTrip.Round(time.Millisecond))
	// The kept runs are s400..s499: s490..s499 match.
	if got.Rows != 10 {
		t.Errorf("the filter shows %d rows, want 10", got.Rows)
	}
	if got.MS > 200 || roundTrip > time.Second {
		t.Errorf("filtering took %.1f ms (round trip %v), want under 200 ms (1 s)", got.MS, roundTrip)
	}
	t0 = time.Now()
	evalJS[chromedp.Void](t, ctx, `document.querySelector('#sessions tbody tr').click(); undefined`)
	waitJS(t, ctx, "the chosen run", `document.querySelector('#run[data-status="stop"] .tool')`, 5*time.Second)
	t.Logf("a click on a session showed its run in %v", time.Since(t0).Round(time.Millisecond))
}

// TestDashboardTraceLink opens two dashboards of one fleet, one with a
// TraceURL and one without, on runs whose events carry a trace_id (as an
// orchestrator that records traces publishes them), and checks the run
// view: with the TraceURL the short trace id links to the run's trace in a
// new tab; without it the id is text; an id that is not 32 lowercase hex
// digits, markup included, is not shown on either, and runs nothing.
func TestDashboardTraceLink(t *testing.T) {
	const traceURL = "http://localhost:16686/trace/{trace_id}?from=dashboard"
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	f := startFleet(t, dashboard.Options{ReadOnly: true, Config: dashboard.Config{TraceURL: traceURL}})
	subjects, _ := bus.NewSubjects("")
	plain, err := dashboard.Open(context.Background(), bustest.MustConnect(t, f.srv), subjects, dashboard.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	plainURL := httptestServer(t, plain)
	t.Cleanup(func() { plain.Close() }) // before the server's Close, which waits for the event streams
	ctx := browser(t)

	publishTracedRun(t, f.nc, "linked", traceID)
	publishTracedRun(t, f.nc, "none", "")
	publishTracedRun(t, f.nc, "markup", traceID[:16]+`"><script>window.__pwned = 3</script>`)
	publishTracedRun(t, f.nc, "upper", strings.ToUpper(traceID))
	publishTracedRun(t, f.nc, "short", traceID[:31])

	type fact struct {
		Text   string `json:"text"`
		ID     string `json:"id"`
		Links  int    `json:"links"`
		Href   string `json:"href"`
		Target string `json:"target"`
		Rel    string `json:"rel"`
	}
	// look shows the session's run and returns its trace fact; Text is ""
	// when the run shows none.
	look := func(t *testing.T, session string) fact {
		t.Helper()
		evalJS[chromedp.Void](t, ctx, `location.hash = encodeURIComponent('otel/`+session+`'); undefined`)
		waitJS(t, ctx, "the run of "+session, `document.querySelector('#run[data-session="`+session+`"][data-status="stop"]')`, 10*time.Second)
		return evalJS[fact](t, ctx, `(() => {
			const f = document.querySelector('#run .trace');
			const a = document.querySelector('#run a');
			return {
				text: f ? f.textContent : '', id: f ? f.dataset.traceId : '',
				links: document.querySelectorAll('#run a').length,
				href: a ? a.getAttribute('href') : '', target: a ? a.target : '', rel: a ? a.rel : '',
			};
		})()`)
	}
	notShown := func(t *testing.T, session string) {
		t.Helper()
		if got := look(t, session); got != (fact{}) {
			t.Errorf("%s: the run shows a trace: %+v", session, got)
		}
		if text := evalJS[string](t, ctx, `document.querySelector('#run').textContent`); contains(text, "trace") || contains(text, "script") || contains(text, "4bf9") {
			t.Errorf("%s: the run view shows %q", session, text)
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll('main script, main img').length + (window.__pwned || 0)`); n != 0 {
			t.Errorf("%s: the trace id became elements or ran (%d)", session, n)
		}
	}
	for _, page := range []struct {
		name, url string
		link      bool
	}{{"with a trace URL", f.url, true}, {"without", plainURL, false}} {
		t.Run(page.name, func(t *testing.T) {
			if err := chromedp.Do(ctx, chromedp.Navigate(page.url+"/")); err != nil {
				t.Fatal(err)
			}
			waitJS(t, ctx, "the replay", `document.body.dataset.replayed === 'true'`, 10*time.Second)
			got := look(t, "linked")
			if got.Text != "trace 4bf92f35…" || got.ID != traceID {
				t.Errorf("the trace fact shows %q (id %q), want %q (id %s)", got.Text, got.ID, "trace 4bf92f35…", traceID)
			}
			if page.link {
				want := fact{Text: got.Text, ID: got.ID, Links: 1, Href: "http://localhost:16686/trace/" + traceID + "?from=dashboard", Target: "_blank", Rel: "noopener"}
				if got != want {
					t.Errorf("the trace link = %+v, want %+v", got, want)
				}
			} else if got.Links != 0 {
				t.Errorf("without a trace URL the run shows %d links (%q), want the id as text", got.Links, got.Href)
			}
			for _, session := range []string{"none", "markup", "upper", "short"} {
				notShown(t, session)
			}
		})
	}
}

// publishTracedRun publishes a made-up run of one turn of agent otel on
// agent.events.otel.<session>.<type>, every event with traceID ("" for
// none), as an orchestrator that records traces would.
func publishTracedRun(t *testing.T, nc *nats.Conn, session, traceID string) {
	t.Helper()
	seq := uint64(0)
	pub := func(e agentfleet.Event) {
		seq++
		e.Agent, e.Session, e.RunID, e.Seq, e.Time, e.TraceID = "otel", session, "run-"+session, seq, time.Now().UTC(), traceID
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish("agent.events.otel."+session+"."+string(e.Type), b); err != nil {
			t.Fatal(err)
		}
	}
	answer := &agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{agentfleet.Text("done")}, StopReason: agentfleet.StopReasonStop,
		Usage: &agentfleet.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12}}
	pub(agentfleet.Event{Type: agentfleet.EventRunStart, Orchestrator: "otel"})
	pub(agentfleet.Event{Type: agentfleet.EventTurnStart, Turn: 1})
	pub(agentfleet.Event{Type: agentfleet.EventMessageStart, Turn: 1})
	pub(agentfleet.Event{Type: agentfleet.EventMessageEnd, Turn: 1, Message: answer})
	pub(agentfleet.Event{Type: agentfleet.EventTurnEnd, Turn: 1})
	pub(agentfleet.Event{Type: agentfleet.EventRunEnd, Turn: 1, StopReason: agentfleet.StopReasonStop, Message: answer})
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// publishRuns publishes n made-up runs of 20 events each, as an
// orchestrator would, on agent.events.load.s<i>.<type>.
func publishRuns(t *testing.T, nc *nats.Conn, n int) {
	t.Helper()
	for i := range n {
		session, run := fmt.Sprintf("s%d", i), fmt.Sprintf("run-%04d", i)
		seq := uint64(0)
		pub := func(e agentfleet.Event) {
			seq++
			e.Agent, e.Session, e.RunID, e.Seq, e.Time = "load", session, run, seq, time.Now().UTC()
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if err := nc.Publish("agent.events.load."+session+"."+string(e.Type), b); err != nil {
				t.Fatal(err)
			}
		}
		usage := &agentfleet.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12}
		pub(agentfleet.Event{Type: agentfleet.EventRunStart, Orchestrator: "load"})
		pub(agentfleet.Event{Type: agentfleet.EventTurnStart, Turn: 1})
		pub(agentfleet.Event{Type: agentfleet.EventMessageStart, Turn: 1})
		for _, d := range []string{"looking ", "it ", "up"} {
			pub(agentfleet.Event{Type: agentfleet.EventMessageUpdate, Turn: 1, Delta: d})
		}
		pub(agentfleet.Event{Type: agentfleet.EventMessageEnd, Turn: 1, Message: &agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{agentfleet.Text("looking it up")}, Usage: usage}})
		pub(agentfleet.Event{Type: agentfleet.EventToolStart, Turn: 1, ToolCallID: "c1", ToolName: "echo", Arguments: map[string]any{"text": session}})
		pub(agentfleet.Event{Type: agentfleet.EventToolUpdate, Turn: 1, ToolCallID: "c1", ToolName: "echo", Partial: map[string]any{"done": 0.5}})
		pub(agentfleet.Event{Type: agentfleet.EventToolUpdate, Turn: 1, ToolCallID: "c1", ToolName: "echo", Partial: map[string]any{"done": 0.9}})
		pub(agentfleet.Event{Type: agentfleet.EventToolEnd, Turn: 1, ToolCallID: "c1", ToolName: "echo", Result: agentfleet.TextResult(session), Outcome: "ok", DurationMS: 3, Worker: "toolworker/load", Attempt: 1})
		pub(agentfleet.Event{Type: agentfleet.EventToolStart, Turn: 1, ToolCallID: "c2", ToolName: "fail", Arguments: map[string]any{}})
		pub(agentfleet.Event{Type: agentfleet.EventToolEnd, Turn: 1, ToolCallID: "c2", ToolName: "fail", Result: agentfleet.TextResult("fail: always"), IsError: true, Outcome: "error", DurationMS: 1, Worker: "toolworker/load", Attempt: 1})
		pub(agentfleet.Event{Type: agentfleet.EventTurnEnd, Turn: 1})
		pub(agentfleet.Event{Type: agentfleet.EventTurnStart, Turn: 2})
		pub(agentfleet.Event{Type: agentfleet.EventMessageStart, Turn: 2})
		pub(agentfleet.Event{Type: agentfleet.EventMessageUpdate, Turn: 2, Delta: "done"})
		pub(agentfleet.Event{Type: agentfleet.EventMessageEnd, Turn: 2, Message: &agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{agentfleet.Text("done")}, Usage: usage}})
		pub(agentfleet.Event{Type: agentfleet.EventTurnEnd, Turn: 2})
		pub(agentfleet.Event{Type: agentfleet.EventRunEnd, Turn: 2, StopReason: agentfleet.StopReasonStop,
			Message: &agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{agentfleet.Text("done")}, StopReason: agentfleet.StopReasonStop, Usage: usage}})
		if seq != 20 {
			t.Fatalf("a made-up run has %d events, want 20", seq)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
