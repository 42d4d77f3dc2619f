package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/nats-io/nats.go"
)

// sseEvent is one event of a Server-Sent Events stream.
type sseEvent struct{ id, name, data string }

// openEvents opens the event stream at query with the given
// Last-Event-ID (if any) and returns a channel of its events, closed when
// the stream ends; the stream ends with the test.
func openEvents(t *testing.T, url, query, lastID string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/events"+query, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /api/events%s: %s %s", query, resp.Status, resp.Header.Get("Content-Type"))
	}
	ch := make(chan sseEvent, 1024)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.data != "" || e.name != "" {
					ch <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	return ch
}

// next returns the next event of ch within 10 s.
func next(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return sseEvent{}
}

// publishNumbered publishes the events numbered from..to of one session
// (their turn is the number), as an orchestrator would.
func publishNumbered(t *testing.T, nc *nats.Conn, session string, from, to int) {
	for i := from; i <= to; i++ {
		e := agentfleet.Event{Type: agentfleet.EventTurnStart, Agent: "gap", Session: session, RunID: "run-" + session, Turn: i, Seq: uint64(i), Time: time.Now().UTC()}
		b, _ := json.Marshal(e)
		if err := nc.Publish("agent.events.gap."+session+".turn.start", b); err != nil {
			t.Error(err)
			return
		}
	}
	if err := nc.Flush(); err != nil {
		t.Error(err)
	}
}

// waitHandedOut opens an event stream with a replay and reads it until the
// test event numbered n has come, then closes it. Replayed or live, the
// event is then one the hub has handed out: a page that joins later
// replays it.
func waitHandedOut(t *testing.T, url string, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/events?since=1h", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	want := fmt.Sprintf(`"turn":%d,`, n)
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := make(chan bool, 1)
	go func() {
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"agent":"gap"`) && strings.Contains(sc.Text(), want) {
				found <- true
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatalf("the live stream ended before event %d", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("event %d not handed out live within 10s", n)
	}
}

// TestEventsReplayThenLiveWithoutGapOrRepeat opens the event stream with a
// replay range while events are being published, before, during and after
// the switch from the stored events to the live ones, and checks that the
// page gets every event once, in order; then that a stream resumed after
// an event id (what the browser does when it reconnects) starts right
// after it.
func TestEventsReplayThenLiveWithoutGapOrRepeat(t *testing.T) {
	f := startFleet(t, dashboard.Options{ReadOnly: true})
	const before, total = 300, 3000
	publishNumbered(t, f.nc, "s", 1, before)
	// The hub takes the events from the stream, a little after NATS took
	// them: wait until it has handed out the last one published before,
	// so that the page below must replay them all.
	waitHandedOut(t, f.url, before)
	done := make(chan struct{})
	go func() {
		defer close(done)
		publishNumbered(t, f.nc, "s", before+1, total)
	}()
	ch := openEvents(t, f.url, "?since=1h", "")
	if e := next(t, ch); e.name != "hello" || !strings.Contains(e.data, `"replay":true`) {
		t.Fatalf("first event = %+v, want hello with replay", e)
	}
	got := 0
	ids := map[int]string{}
	replayed := -1
	for got < total {
		e := next(t, ch)
		if e.name == "replayed" {
			replayed = got
			continue
		}
		if e.name != "" {
			continue
		}
		var ev agentfleet.Event
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			t.Fatalf("event %q: %v", e.data, err)
		}
		if ev.Agent != "gap" {
			continue
		}
		got++
		if ev.Turn != got {
			t.Fatalf("event %d is number %d: a gap or a repeat at the switch (replayed %d)", got, ev.Turn, replayed)
		}
		ids[got] = e.id
	}
	<-done
	t.Logf("%d events, %d of them from the replay", total, replayed)
	if replayed < before {
		t.Errorf("replay ended after %d events, want at least the %d published before", replayed, before)
	}

	// Resume after event 1000.
	ch = openEvents(t, f.url, "", ids[1000])
	for want := 1001; want <= 1010; {
		e := next(t, ch)
		if e.name != "" {
			continue
		}
		var ev agentfleet.Event
		json.Unmarshal([]byte(e.data), &ev)
		if ev.Agent != "gap" {
			continue
		}
		if ev.Turn != want {
			t.Fatalf("resumed after %s: got number %d, want %d", ids[1000], ev.Turn, want)
		}
		want++
	}
}

// TestActionsRejectBadInput posts what a page should never send, and what
// another site might, and checks each answer: a 4xx status and an error
// that says what was wrong.
func TestActionsRejectBadInput(t *testing.T) {
	f := startFleet(t, dashboard.Options{})
	if f.dash.ReadOnly() {
		t.Fatal("the dashboard of an unrestricted user is read only")
	}
	big := `{"agent":"default","session":"demo","content":"` + strings.Repeat("x", 100<<10) + `"}`
	for _, tc := range []struct {
		name, method, path, body, contentType, origin string
		code                                          int
		want                                          string
	}{
		{"broken JSON", "POST", "/api/send", `{"agent":`, "", "", 400, "not the JSON object expected"},
		{"not an object", "POST", "/api/send", `["default"]`, "", "", 400, "not the JSON object expected"},
		{"unknown field", "POST", "/api/send", `{"agent":"default","session":"demo","content":"hi","role":"system"}`, "", "", 400, `unknown field "role"`},
		{"two values", "POST", "/api/send", `{"agent":"default","session":"demo","content":"hi"} {}`, "", "", 400, "more than one JSON value"},
		{"agent with a dot", "POST", "/api/send", `{"agent":"default.x","session":"demo","content":"hi"}`, "", "", 400, `agent name "default.x" may hold only`},
		{"wildcard session", "POST", "/api/send", `{"agent":"default","session":">","content":"hi"}`, "", "", 400, `session name ">" may hold only`},
		{"no session", "POST", "/api/send", `{"agent":"default","content":"hi"}`, "", "", 400, "session name is empty"},
		{"long agent", "POST", "/api/send", `{"agent":"` + strings.Repeat("a", 129) + `","session":"demo","content":"hi"}`, "", "", 400, "the limit is 128"},
		{"empty content", "POST", "/api/send", `{"agent":"default","session":"demo","content":"  "}`, "", "", 400, "content is empty"},
		{"oversized body", "POST", "/api/send", big, "", "", 413, "larger than 65536 bytes"},
		{"form post", "POST", "/api/send", `agent=default`, "application/x-www-form-urlencoded", "", 415, "Content-Type: application/json"},
		{"another site", "POST", "/api/send", `{"agent":"default","session":"demo","content":"hi"}`, "", "http://evil.example", 403, "is not this dashboard's"},
		{"abort bad JSON", "POST", "/api/abort", `{`, "", "", 400, "not the JSON object expected"},
		{"abort bad session", "POST", "/api/abort", `{"agent":"default","session":"a b"}`, "", "", 400, `session name "a b"`},
		{"abort no run", "POST", "/api/abort", `{"agent":"default","session":"idle"}`, "", "", 200, `"stop_reason":"error"`},
		{"approve no call", "POST", "/api/approve", `{"agent":"default","session":"demo","approve":true}`, "", "", 400, "tool_call_id is empty"},
		{"approve unknown call", "POST", "/api/approve", `{"agent":"default","session":"demo","tool_call_id":"nope","approve":true}`, "", "", 409, `no tool call "nope" waits for approval`},
		{"bad since", "GET", "/api/events?since=yesterday", "", "", "", 400, "neither a duration"},
		{"bad event id", "GET", "/api/events?after=x1", "", "", "", 400, "not a stream sequence"},
		{"send by GET", "GET", "/api/send", "", "", "", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, f.url+tc.path, strings.NewReader(tc.body))
			if tc.method == "POST" {
				ct := tc.contentType
				if ct == "" {
					ct = "application/json"
				}
				req.Header.Set("Content-Type", ct)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.code)
			}
			text := string(body)
			var answer struct{ Error string }
			if json.Unmarshal(body, &answer) == nil && answer.Error != "" {
				text = answer.Error
			}
			if !strings.Contains(text, tc.want) {
				t.Errorf("%s %s answered %s, want it to say %q", tc.method, tc.path, body, tc.want)
			}
		})
	}
}

// TestSendStartsARun posts a message as the page does and waits for the
// run it starts to end.
func TestSendStartsARun(t *testing.T) {
	f := startFleet(t, dashboard.Options{})
	ends, err := f.nc.SubscribeSync("agent.events.default.api.run.end")
	if err != nil {
		t.Fatal(err)
	}
	f.nc.Flush()
	resp, err := http.Post(f.url+"/api/send", "application/json", strings.NewReader(`{"agent":"default","session":"api","content":"echo from the api","id":"api-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /api/send: %s", resp.Status)
	}
	m, err := ends.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no run.end after the send: %v", err)
	}
	var e agentfleet.Event
	json.Unmarshal(m.Data, &e)
	if e.StopReason != agentfleet.StopReasonStop || !strings.Contains(agentfleet.JoinText(e.Message.Content), "from the api") {
		t.Errorf("run.end = %s", m.Data)
	}
}

// TestDashboardUserOfDeployConf runs the fleet under deploy/nats/nats.conf
// and the dashboard as its read-only dashboard user: the dashboard replays
// and follows the events, shows no actions and refuses them, and its probe
// reached no agent.
func TestDashboardUserOfDeployConf(t *testing.T) {
	srv, err := server.RunEmbedded(server.EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir(), ConfigFile: "../../deploy/nats/nats.conf"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	connect := func(user string) *nats.Conn {
		nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL(), Name: user, User: user, Password: user + "-CHANGE-ME"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	w, err := worker.Start(connect("toolworker"), worker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Drain(context.Background()) })
	o, err := orchestrator.New(connect("orchestrator"), orchestrator.Config{Model: scriptedModel(), Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o.Close(ctx)
	})
	client := connect("client")
	if _, err := client.Request("agent.ask.default.before", []byte("hello before"), 15*time.Second); err != nil {
		t.Fatal(err)
	}

	subjects, _ := bus.NewSubjects("")
	dash, err := dashboard.Open(context.Background(), connect("dashboard"), subjects, dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dash.Close() })
	if !dash.ReadOnly() {
		t.Error("the dashboard user's dashboard has actions")
	}
	hs := httptestServer(t, dash)
	ch := openEvents(t, hs, "?since=1h", "")
	hello := next(t, ch)
	if !strings.Contains(hello.data, `"read_only":true`) || !strings.Contains(hello.data, `"replay":true`) {
		t.Fatalf("hello = %s, want read only with replay", hello.data)
	}
	// The run from before, replayed, then one from after, live.
	waitFor := func(session string) {
		t.Helper()
		for {
			e := next(t, ch)
			if strings.Contains(e.data, `"session":"`+session+`"`) && strings.Contains(e.data, `"type":"run.end"`) {
				return
			}
		}
	}
	waitFor("before")
	if _, err := client.Request("agent.ask.default.after", []byte("hello after"), 15*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor("after")

	resp, err := http.Post(hs+"/api/send", "application/json", strings.NewReader(`{"agent":"default","session":"demo","content":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "read only") {
		t.Errorf("POST /api/send as the dashboard user: %s %s, want 403 read only", resp.Status, body)
	}
	if n := o.Sessions(); n != 2 {
		t.Errorf("the orchestrator has %d sessions, want the 2 asked (the probe must reach none)", n)
	}
	// The dashboard user may read a stored session: the role lets it ask
	// the history subject.
	resp, err = http.Get(hs + "/api/history?agent=default&session=before")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "hello before") {
		t.Errorf("GET /api/history as the dashboard user: %s %.300s, want 200 with the stored message", resp.Status, body)
	}
}
