package dashboard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	busclient "github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/chromedp/chromedp"
)

func getHistory(t *testing.T, url, query string) (int, string) {
	t.Helper()
	resp, err := http.Get(url + "/api/history" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHistoryRoute reads a stored session page by page through GET
// /api/history: the records are those the orchestrator stored, in order,
// and following next reads each once.
func TestHistoryRoute(t *testing.T) {
	f := startFleet(t, dashboard.Options{ReadOnly: true})
	for _, text := range []string{"echo one", "echo two", "echo three"} {
		if m := f.ask(t, "paged", text); m.StopReason != agentfleet.StopReasonStop {
			t.Fatalf("ask %q: %s", text, m.StopReason)
		}
	}
	var all []busclient.HistoryRecordJSON
	from, pages := uint64(0), 0
	for {
		q := "?agent=default&session=paged&limit=2"
		if from > 0 {
			q += "&from_seq=" + jsonNumber(from)
		}
		code, body := getHistory(t, f.url, q)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", q, code, body)
		}
		var page busclient.HistoryReplyJSON
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatalf("page %s: %v", body, err)
		}
		if page.Agent != "default" || page.Session != "paged" || page.LastSeq == 0 {
			t.Fatalf("page names %s/%s, last seq %d", page.Agent, page.Session, page.LastSeq)
		}
		all = append(all, page.Records...)
		pages++
		if page.Next == 0 {
			break
		}
		if page.Next <= from || pages > 50 {
			t.Fatalf("next %d after from %d: the pages do not advance", page.Next, from)
		}
		from = page.Next
	}
	if pages < 2 {
		t.Errorf("%d page(s) at limit 2, want several", pages)
	}
	var users []string
	prev := struct {
		seq uint64
		idx int
	}{}
	runs := map[string]bool{}
	for i, r := range all {
		if i > 0 && (r.Seq < prev.seq || (r.Seq == prev.seq && r.Index <= prev.idx)) {
			t.Fatalf("record %d at %d.%d after %d.%d: out of order or repeated", i, r.Seq, r.Index, prev.seq, prev.idx)
		}
		prev.seq, prev.idx = r.Seq, r.Index
		if r.Kind == "user" {
			var m agentfleet.UserMessage
			if err := json.Unmarshal(r.Body, &m); err != nil {
				t.Fatal(err)
			}
			users = append(users, m.Content[0].Text)
			runs[r.RunID] = true
		}
	}
	if strings.Join(users, ",") != "echo one,echo two,echo three" || len(runs) != 3 {
		t.Errorf("stored user messages %q in %d runs, want the three asked, each its own run", users, len(runs))
	}
}

func jsonNumber(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// TestHistoryRouteRefusesBadInput: every bad query is refused with 400 and
// what is wrong, before any request reaches NATS; an unknown agent is the
// orchestrator's refusal (422); a session with no record is an empty page.
func TestHistoryRouteRefusesBadInput(t *testing.T) {
	f := startFleet(t, dashboard.Options{ReadOnly: true})
	for _, c := range []struct{ query, want string }{
		{"", "want ?agent="},
		{"?agent=default", "want ?agent="},
		{"?session=s", "want ?agent="},
		{"?agent=default&session=a.b", "session"},
		{"?agent=de*fault&session=s", "agent"},
		{"?agent=default&session=%3E", "session"},
		{"?agent=default&session=" + strings.Repeat("x", 300), "session"},
		{"?agent=default&session=s&session=t", "given 2 times"},
		{"?agent=default&session=s&from_seq=-1", "from_seq"},
		{"?agent=default&session=s&from_seq=1e3", "from_seq"},
		{"?agent=default&session=s&limit=0", "limit"},
		{"?agent=default&session=s&limit=1001", "limit"},
		{"?agent=default&session=s&limit=x", "limit"},
		{"?agent=default&session=s&subject=agent.fork.default.s", "unknown parameter"},
	} {
		code, body := getHistory(t, f.url, c.query)
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("GET /api/history%.80s = %d %s, want 400 naming %q", c.query, code, body, c.want)
		}
	}
	if code, body := getHistory(t, f.url, "?agent=nosuchagent&session=s"); code != http.StatusUnprocessableEntity || !strings.Contains(body, "nosuchagent") {
		t.Errorf("unknown agent = %d %s, want 422 naming it", code, body)
	}
	code, body := getHistory(t, f.url, "?agent=default&session=never")
	var page busclient.HistoryReplyJSON
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Records) != 0 || page.LastSeq != 0 {
		t.Errorf("a session with no record = %d %s, want 200 and an empty page", code, body)
	}
}

// TestDashboardStoredSession opens in Chromium a session whose events the
// page never saw (its events are older than the page's replay), through
// the form, and finds its stored records grouped by run; a session seen
// live offers its stored history too.
func TestDashboardStoredSession(t *testing.T) {
	f := startFleet(t, dashboard.Options{})
	for _, text := range []string{"echo first <b>run</b>", "echo second run"} {
		if m := f.ask(t, "archived", text); m.StopReason != agentfleet.StopReasonStop {
			t.Fatalf("ask: %s", m.StopReason)
		}
	}
	ctx := browser(t)
	// since=0: no replay, so the page knows nothing of "archived".
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/?since=0")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the page", `document.getElementById('conn').dataset.state === 'live'`, 10*time.Second)
	if n := evalJS[int](t, ctx, `document.querySelectorAll('tr.session').length`); n != 0 {
		t.Fatalf("%d sessions listed without replay, want none", n)
	}
	evalJS[chromedp.Void](t, ctx, `document.getElementById('stored-session').value = 'archived'; document.getElementById('stored-button').click(); undefined`)
	waitJS(t, ctx, "the stored runs", `document.querySelectorAll('#run[data-session="archived"] .stored-run').length === 2`, 10*time.Second)
	texts := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#run .stored-run .record[data-kind="user"] .record-text')].map((e) => e.textContent)`)
	if len(texts) != 2 || texts[0] != "echo first <b>run</b>" || texts[1] != "echo second run" {
		t.Errorf("stored user records %q, want the two asked, as text", texts)
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#run b').length`); n != 0 {
		t.Error("a stored record's markup became an element")
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('#run .record[data-kind="end"]').length`); n != 2 {
		t.Errorf("%d run ends shown, want 2", n)
	}
	if !strings.Contains(evalJS[string](t, ctx, `location.hash`), "stored=1") {
		t.Error("the address does not name the stored view")
	}
	// A session asked now is seen live; its head offers the stored history.
	f.ask(t, "fresh", "echo now")
	show(t, ctx, "fresh")
	waitJS(t, ctx, "the live run", `document.querySelector('#run[data-session="fresh"][data-status="stop"] .stored-link')`, 10*time.Second)
	evalJS[chromedp.Void](t, ctx, `document.querySelector('#run .stored-link').click(); undefined`)
	waitJS(t, ctx, "its stored records", `document.querySelectorAll('#run[data-session="fresh"] .stored-run .record[data-kind="user"]').length === 1`, 10*time.Second)
	// A session with no record says so.
	evalJS[chromedp.Void](t, ctx, `document.getElementById('stored-session').value = 'nothing-here'; document.getElementById('stored-button').click(); undefined`)
	waitJS(t, ctx, "the empty note", `document.querySelector('#run[data-session="nothing-here"] .stored-empty')`, 10*time.Second)
	// A bad name is refused on the page.
	evalJS[chromedp.Void](t, ctx, `document.getElementById('stored-session').value = 'a.b'; document.getElementById('stored-button').click(); undefined`)
	waitJS(t, ctx, "the refusal", `document.getElementById('stored-status').textContent.includes('names')`, 5*time.Second)
}
