package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/chromedp/chromedp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestDashboardTraceView runs a traced fleet whose orchestrator keeps its
// last spans (tracing.Recent) and checks, in Chromium, that a run's trace
// id links to the built-in view and that the view shows the trace's spans
// as a waterfall: every kept span once, each child under its parent, names
// and attributes as text; markup in a span is text and runs nothing; an
// address that is not a trace id shows an error.
func TestDashboardTraceView(t *testing.T) {
	recent := tracing.NewRecent(tracing.RecentConfig{Spans: 1000})
	roots := make(rootsEnded, 64)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(recent), sdktrace.WithSpanProcessor(roots))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	f := startFleetTraced(t, dashboard.Options{ReadOnly: true, Config: dashboard.Config{Traces: recent}}, tp.Tracer(tracing.Scope))
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the replay", `document.body.dataset.replayed === 'true'`, 10*time.Second)
	f.send(t, "traced", "echo traced")
	show(t, ctx, "traced")
	waitJS(t, ctx, "the run's trace link", `document.querySelector('#run[data-session="traced"][data-status="stop"] .trace a')`, 10*time.Second)
	traceID := evalJS[string](t, ctx, `document.querySelector('#run .trace').dataset.traceId`)
	href := evalJS[string](t, ctx, `document.querySelector('#run .trace a').getAttribute('href')`)
	if href != "trace.html#"+traceID {
		t.Fatalf("the trace link is %q, want trace.html#%s", href, traceID)
	}
	// The run's spans end with it, the root last: wait for the root.
	for done := false; !done; {
		select {
		case id := <-roots:
			done = id == traceID
		case <-time.After(10 * time.Second):
			t.Fatalf("the root span of trace %s did not end", traceID)
		}
	}
	kept := recent.Trace(traceID)
	if len(kept) < 2 {
		t.Fatalf("the orchestrator kept %d spans of the run's trace, want a root and a child", len(kept))
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/"+href)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the waterfall", `document.body.dataset.state === 'shown'`, 10*time.Second)
	type row struct {
		ID     string `json:"id"`
		Parent string `json:"parent"`
		Depth  int    `json:"depth"`
		Name   string `json:"name"`
		Attrs  string `json:"attrs"`
	}
	rows := evalJS[[]row](t, ctx, `[...document.querySelectorAll('#waterfall .span')].map((d) => ({
		id: d.dataset.spanId, parent: d.dataset.parentId, depth: Number(d.dataset.depth),
		name: d.querySelector('.name').textContent, attrs: d.querySelector('.span-details').textContent }))`)
	if len(rows) != len(kept) {
		t.Fatalf("the view shows %d spans, the orchestrator kept %d", len(rows), len(kept))
	}
	at := map[string]int{}
	for i, r := range rows {
		at[r.ID] = i
	}
	byID := map[string]tracing.SpanRecord{}
	for _, s := range kept {
		byID[s.SpanID] = s
		i, ok := at[s.SpanID]
		if !ok {
			t.Errorf("span %s %q is not shown", s.SpanID, s.Name)
			continue
		}
		if rows[i].Name != s.Name || rows[i].Parent != s.ParentID {
			t.Errorf("span %s shows as %+v, want name %q parent %q", s.SpanID, rows[i], s.Name, s.ParentID)
		}
		if p, ok := at[s.ParentID]; ok && (p >= i || rows[i].Depth != rows[p].Depth+1) {
			t.Errorf("span %q (row %d, depth %d) is not under its parent (row %d, depth %d)", s.Name, i, rows[i].Depth, p, rows[p].Depth)
		}
		for _, kv := range s.Attributes {
			if !contains(rows[i].Attrs, kv.Key) {
				t.Errorf("span %q does not show attribute %s", s.Name, kv.Key)
			}
		}
	}
	if rows[0].Depth != 0 || byID[rows[0].ID].ParentID != "" {
		t.Errorf("the first row %+v is not the trace's root", rows[0])
	}
	screenshot(t, ctx, screenshots(t), "trace.png")

	t.Run("markup is text", func(t *testing.T) {
		const markup = `<img src="x" onerror="window.__pwned = 1"><script>window.__pwned = 2</script>`
		_, s := tp.Tracer("test").Start(context.Background(), markup, trace.WithAttributes(attribute.String("evil", markup)))
		s.End()
		id := s.SpanContext().TraceID().String()
		if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/trace.html#"+id)); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the span", `document.body.dataset.state === 'shown'`, 10*time.Second)
		if got := evalJS[string](t, ctx, `document.querySelector('#waterfall .span .name').textContent`); got != markup {
			t.Errorf("the name shows as %q", got)
		}
		if n := evalJS[int](t, ctx, `document.querySelectorAll('main img, main script').length + (window.__pwned || 0)`); n != 0 {
			t.Errorf("the markup became elements or ran (%d)", n)
		}
	})

	t.Run("hostile ids in the page", func(t *testing.T) {
		for _, frag := range []string{"", "nosuch", url.PathEscape(`"><img src=x onerror="window.__pwned=3">`), strings.Repeat("a", 31), strings.ToUpper(traceID)} {
			if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/trace.html#"+frag)); err != nil {
				t.Fatal(err)
			}
			waitJS(t, ctx, "the error for #"+frag, `document.body.dataset.state === 'error'`, 10*time.Second)
			if n := evalJS[int](t, ctx, `document.querySelectorAll('#waterfall .span, main img').length + (window.__pwned || 0)`); n != 0 {
				t.Errorf("#%s: the page shows %d spans or elements", frag, n)
			}
		}
	})
}

// rootsEnded is a span processor that tells the trace id of every root
// span that ends.
type rootsEnded chan string

func (rootsEnded) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r rootsEnded) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.Parent().IsValid() {
		select {
		case r <- s.SpanContext().TraceID().String():
		default:
		}
	}
}
func (rootsEnded) Shutdown(context.Context) error   { return nil }
func (rootsEnded) ForceFlush(context.Context) error { return nil }

// TestTraceAPIRejectsHostileIDs asks GET /api/trace with ids that are
// not trace ids, with an unknown one, and of a dashboard that keeps no
// traces: each is refused with a clear error that quotes at most the
// start of the id, and the handler serves on.
func TestTraceAPIRejectsHostileIDs(t *testing.T) {
	recent := tracing.NewRecent(tracing.RecentConfig{Spans: 10})
	f := startFleet(t, dashboard.Options{ReadOnly: true, Config: dashboard.Config{Traces: recent}})
	plain := startFleet(t, dashboard.Options{ReadOnly: true})
	get := func(base, rawQuery string) (int, string) {
		t.Helper()
		res, err := http.Get(base + "/api/trace?" + rawQuery)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		var e struct{ Error string }
		if json.Unmarshal(b, &e) != nil {
			t.Errorf("?%.60s: the answer is not JSON: %.200s", rawQuery, b)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("?%.60s: Content-Type %q", rawQuery, ct)
		}
		return res.StatusCode, e.Error
	}
	for _, tc := range []struct {
		name, query string
		status      int
		want        string
	}{
		{"none", "", 400, "32 lowercase hex digits"},
		{"empty", "id=", 400, `trace id ""`},
		{"short", "id=4bf92f3577b34da6", 400, "32 lowercase hex digits"},
		{"upper", "id=4BF92F3577B34DA6A3CE929D0E0E4736", 400, "lowercase"},
		{"zero", "id=" + strings.Repeat("0", 32), 400, "not all zero"},
		{"markup", "id=" + url.QueryEscape(`"><script>alert(1)</script>`), 400, `\"><script>`},
		{"huge", "id=" + strings.Repeat("f", 100000), 400, "is not a W3C trace id"},
		{"nul and newline", "id=" + url.QueryEscape("4bf92f3577b34da6a3ce929d0e0e473\x00\n"), 400, "is not a W3C trace id"},
		{"unknown", "id=4bf92f3577b34da6a3ce929d0e0e4736", 404, "no span of trace 4bf92f3577b34da6a3ce929d0e0e4736 is kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, msg := get(f.url, tc.query)
			if status != tc.status || !contains(msg, tc.want) {
				t.Errorf("status %d %q, want %d and %q", status, msg, tc.status, tc.want)
			}
			if len(msg) > 600 {
				t.Errorf("the error is %d bytes long: it quotes too much of the id", len(msg))
			}
		})
	}
	if status, msg := get(plain.url, "id=4bf92f3577b34da6a3ce929d0e0e4736"); status != 404 || !contains(msg, "keeps no traces") {
		t.Errorf("a dashboard without traces answers %d %q", status, msg)
	}
	if status, _ := get(f.url, "id=4bf92f3577b34da6a3ce929d0e0e4736"); status != 404 {
		t.Errorf("after the hostile ids the API answers %d", status)
	}
}
