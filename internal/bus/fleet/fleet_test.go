package fleet_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// fleetLog records what a Fleet told its callbacks.
type fleetLog struct {
	mu      sync.Mutex
	sets    [][]string // tool names after each change
	skipped []string
	changed chan struct{}
}

func newFleetLog() *fleetLog { return &fleetLog{changed: make(chan struct{}, 1024)} }

func (l *fleetLog) onChange(defs []agentfleet.ToolDef) {
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	l.mu.Lock()
	l.sets = append(l.sets, names)
	l.mu.Unlock()
	l.changed <- struct{}{}
}

func (l *fleetLog) onSkipped(worker, endpoint string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.skipped = append(l.skipped, worker+" "+endpoint+": "+err.Error())
}

// has reports whether the last tool set holds name.
func (l *fleetLog) has(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sets) > 0 && contains(l.sets[len(l.sets)-1], name)
}

// lostAfterFound reports whether a tool set without name came after one
// with it.
func (l *fleetLog) lostAfterFound(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	found := false
	for _, s := range l.sets {
		if contains(s, name) {
			found = true
		} else if found {
			return true
		}
	}
	return false
}

func contains(s []string, name string) bool {
	for _, n := range s {
		if n == name {
			return true
		}
	}
	return false
}

// waitFor waits until cond holds, checking after every change and at least
// every 10 ms, for at most d; it returns how long that took.
func (l *fleetLog) waitFor(t *testing.T, what string, d time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.After(d)
	for !cond() {
		select {
		case <-l.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: not within %v", what, d)
		}
	}
	return time.Since(start)
}

func watch(t *testing.T, nc *nats.Conn, cfg fleet.FleetConfig) (*fleet.Fleet, *fleetLog) {
	t.Helper()
	l := newFleetLog()
	cfg.OnChange, cfg.OnSkipped = l.onChange, l.onSkipped
	subjects, _ := bus.NewSubjects("")
	f, err := fleet.WatchFleet(context.Background(), nc, subjects, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, l
}

// slowWorker is a worker that answers $SRV.INFO late, as a worker on a busy
// event loop or a distant network does. It serves its tool for real. With
// beat it announces itself and beats; without, it is found by rounds only.
type slowWorker struct {
	answers atomic.Int32
	stop    chan struct{}
}

func startSlowWorker(t *testing.T, nc *nats.Conn, id string, delay time.Duration, beat bool) *slowWorker {
	t.Helper()
	w := &slowWorker{stop: make(chan struct{})}
	def := agentfleet.ToolDef{Name: "slowtool", Description: "slow to be found", InputSchema: json.RawMessage(`{"type":"object"}`)}
	info := micro.Info{
		ServiceIdentity: micro.ServiceIdentity{Name: "slow", ID: id, Version: "1.0.0", Metadata: map[string]string{fleet.MetaProtocol: "1", "prefix": "agent"}},
		Type:            micro.InfoResponseType,
		Endpoints:       []micro.EndpointInfo{{Name: def.Name, Subject: "agent.tool." + def.Name, QueueGroup: bus.QueueGroup, Metadata: fleet.ToolMetadata(&def)}},
	}
	b, _ := json.Marshal(info)
	answer := func(m *nats.Msg) {
		go func() {
			select {
			case <-time.After(delay): // the slowness this worker stands for
			case <-w.stop:
				return
			}
			m.Respond(b)
			w.answers.Add(1)
		}()
	}
	for _, s := range []string{"$SRV.INFO", "$SRV.INFO.slow", "$SRV.INFO.slow." + id} {
		if _, err := nc.Subscribe(s, answer); err != nil {
			t.Fatal(err)
		}
	}
	if beat {
		notice, _ := json.Marshal(fleet.FleetNotice{Event: "beat", Service: "slow", ID: id, Tools: []string{def.Name}, BeatMS: 200})
		go func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-w.stop:
					return
				case <-tick.C:
					nc.Publish("agent.fleet", notice)
				}
			}
		}()
	}
	t.Cleanup(func() { close(w.stop) })
	return w
}

// TestLateAnswersAreUsed has workers answer discovery a second late, beside
// a worker that answers at once: each is found, and its tool never comes and
// goes over the rounds that follow.
func TestLateAnswersAreUsed(t *testing.T) {
	for _, beat := range []bool{true, false} {
		name := "without beats"
		if beat {
			name = "with beats"
		}
		t.Run(name, func(t *testing.T) {
			srv := bustest.MustRunNATS(t)
			nc := bustest.MustConnect(t, srv)
			fast, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echoTool("fasttool")}})
			if err != nil {
				t.Fatal(err)
			}
			defer fast.Stop()
			slow := startSlowWorker(t, bustest.MustConnect(t, srv), "slow1", time.Second, beat)
			_, l := watch(t, nc, fleet.FleetConfig{Interval: time.Second, Wait: 200 * time.Millisecond, Window: 1500 * time.Millisecond})
			l.waitFor(t, "the late worker's tool", 5*time.Second, func() bool { return l.has("slowtool") && l.has("fasttool") })
			// Several rounds later, the tool has never been dropped.
			after := slow.answers.Load()
			l.waitFor(t, "five more late answers", 20*time.Second, func() bool { return slow.answers.Load() >= after+5 })
			if l.lostAfterFound("slowtool") || l.lostAfterFound("fasttool") {
				t.Errorf("a tool came and went: %v", l.sets)
			}
		})
	}
}

// TestKilledWorkerIsRemovedWithinBeats cuts a worker off without a word, as
// SIGKILL does: its tools go after a few missed beats, not at the next round.
func TestKilledWorkerIsRemovedWithinBeats(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	wc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toolrpc.Serve(wc, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echoTool("doomed")}, Beat: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	_, l := watch(t, nc, fleet.FleetConfig{})
	l.waitFor(t, "the worker's tool", 5*time.Second, func() bool { return l.has("doomed") })
	wc.Close() // no left notice, no more beats
	took := l.waitFor(t, "the dead worker's tool to go", 5*time.Second, func() bool { return !l.has("doomed") })
	t.Logf("removed %v after the worker died (3 beats of 200ms)", took.Round(time.Millisecond))
}

// fakeInfo is the $SRV.INFO answer of a worker id serving one tool.
func fakeInfo(id, tool string) []byte {
	def := agentfleet.ToolDef{Name: tool, Description: "fake", InputSchema: json.RawMessage(`{"type":"object"}`)}
	b, _ := json.Marshal(micro.Info{
		ServiceIdentity: micro.ServiceIdentity{Name: "fake", ID: id, Version: "1.0.0", Metadata: map[string]string{fleet.MetaProtocol: "1", "prefix": "agent"}},
		Type:            micro.InfoResponseType,
		Endpoints:       []micro.EndpointInfo{{Name: tool, Subject: "agent.tool." + tool, QueueGroup: bus.QueueGroup, Metadata: fleet.ToolMetadata(&def)}},
	})
	return b
}

// TestAnswerFromBeforeLeftIsIgnored has a worker's info answer to a round
// arrive after the worker said it left, as it does when the answer was on
// its way while the worker drained: the worker stays removed. A marker
// answer on the same round, after it, says when the stale one was read.
func TestAnswerFromBeforeLeftIsIgnored(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	wc := bustest.MustConnect(t, srv)
	held := make(chan string, 16)
	var first atomic.Bool
	if _, err := wc.Subscribe("$SRV.INFO", func(m *nats.Msg) {
		if first.CompareAndSwap(false, true) {
			m.Respond(fakeInfo("leaver1", "leaver")) // the first round finds it
			return
		}
		held <- m.Reply // the rounds after it wait
	}); err != nil {
		t.Fatal(err)
	}
	wc.Flush()
	_, l := watch(t, nc, fleet.FleetConfig{Interval: time.Hour, Wait: 200 * time.Millisecond, Window: 10 * time.Second})
	l.waitFor(t, "the worker's tool", 5*time.Second, func() bool { return l.has("leaver") })
	var reply string
	select {
	case reply = <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("no background round asked for info")
	}
	left, _ := json.Marshal(fleet.FleetNotice{Event: "left", Service: "fake", ID: "leaver1"})
	wc.Publish("agent.fleet", left)
	l.waitFor(t, "the left worker's tool to go", 5*time.Second, func() bool { return !l.has("leaver") })
	wc.Publish(reply, fakeInfo("leaver1", "leaver")) // sent before it left
	wc.Publish(reply, fakeInfo("marker1", "marker"))
	l.waitFor(t, "the marker", 5*time.Second, func() bool { return l.has("marker") })
	if l.has("leaver") {
		t.Errorf("the worker that left is back from an answer it sent before: %v", l.sets)
	}

	// A beat after "left" is a worker alive (a notice it did not send
	// removed it): it is taken back.
	beat, _ := json.Marshal(fleet.FleetNotice{Event: "beat", Service: "fake", ID: "leaver1", Tools: []string{"leaver"}, BeatMS: 1000})
	if _, err := wc.Subscribe("$SRV.INFO.fake.leaver1", func(m *nats.Msg) { m.Respond(fakeInfo("leaver1", "leaver")) }); err != nil {
		t.Fatal(err)
	}
	wc.Flush()
	wc.Publish("agent.fleet", beat)
	l.waitFor(t, "the beating worker back", 5*time.Second, func() bool { return l.has("leaver") })
}

// TestNewWorkerIsAddedAtOnce starts a worker beside a running watcher: its
// tools are there within a second, without waiting for a round.
func TestNewWorkerIsAddedAtOnce(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	_, l := watch(t, nc, fleet.FleetConfig{Interval: time.Hour})
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echoTool("fresh")}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	took := l.waitFor(t, "the new worker's tool", time.Second, func() bool { return l.has("fresh") })
	t.Logf("added %v after the worker started", took.Round(time.Microsecond))
}

// TestRollingUpgradeChoosesTheNewestVersion has two versions of a worker
// serve two definitions of one tool: the newer version's is used, every
// round, whichever answers first.
func TestRollingUpgradeChoosesTheNewestVersion(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	for _, v := range []struct{ version, desc string }{{"1.2.0", "new"}, {"1.10.0", "newest"}, {"1.9.9", "old"}} {
		tl := echoTool("shared")
		tl.Description = v.desc
		w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Version: v.version, Tools: []*agentfleet.Tool{tl}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
	}
	f, l := watch(t, nc, fleet.FleetConfig{})
	for range 5 {
		if err := f.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		l.waitFor(t, "three workers", 5*time.Second, func() bool { return f.Workers() == 3 })
		for _, d := range f.Tools() {
			if d.Name == "shared" && d.Description != "newest" {
				t.Fatalf("chose %q, want the definition of version 1.10.0", d.Description)
			}
		}
	}
}

// TestMalformedEndpointIsReported has a worker announce an endpoint whose
// metadata is broken: it is skipped, and said so once, with the reason.
func TestMalformedEndpointIsReported(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	svc, err := micro.AddService(bustest.MustConnect(t, srv), micro.Config{
		Name: "broken", Version: "1.0.0", QueueGroup: bus.QueueGroup,
		Metadata: map[string]string{fleet.MetaProtocol: "1", "prefix": "agent"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	if err := svc.AddEndpoint("bad", micro.HandlerFunc(func(micro.Request) {}), micro.WithEndpointSubject("agent.tool.bad"),
		micro.WithEndpointMetadata(map[string]string{fleet.MetaInputSchema: "{not json"})); err != nil {
		t.Fatal(err)
	}
	f, l := watch(t, nc, fleet.FleetConfig{})
	for range 3 {
		if err := f.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.skipped) != 1 || !strings.Contains(l.skipped[0], "bad: tool bad: metadata input_schema is not valid JSON") {
		t.Errorf("skipped = %q, want the bad endpoint once, with its reason", l.skipped)
	}
}

// TestNATSRestartFailsNoCall restarts the NATS server under a watcher, a
// worker and a client: the tool is never dropped, and calls made as soon as
// the client is back wait for the worker instead of failing.
func TestNATSRestartFailsNoCall(t *testing.T) {
	addr, dir := bustest.FreeAddr(t), t.TempDir()
	srv := bustest.MustRunNATSAt(t, addr, dir)
	connect := func() *nats.Conn {
		nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	wc := connect()
	w, err := toolrpc.Serve(wc, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echoTool("steady")}, Beat: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cc := connect()
	_, l := watch(t, cc, fleet.FleetConfig{})
	l.waitFor(t, "the tool", 5*time.Second, func() bool { return l.has("steady") })
	client, err := toolrpc.NewToolClient(cc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	srv.Shutdown()
	srv.WaitForShutdown()
	srv = bustest.MustRunNATSAt(t, addr, dir)
	// Both connections: a call sent before the worker's subscriptions are
	// back finds no responder, which is another test's case.
	l.waitFor(t, "the client and the worker to reconnect", 20*time.Second, func() bool { return cc.IsConnected() && wc.IsConnected() })
	for i := range 20 {
		_, err := fleetexec.Executor{Client: client}.Execute(context.Background(), &pipeline.Prepared{
			Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "steady"}},
			Call: agentfleet.ToolCall{ID: "c", Name: "steady"}, Args: map[string]any{}, Timeout: 10 * time.Second,
		}, func(any) {})
		if err != nil {
			t.Fatalf("call %d after the restart: %v", i, err)
		}
	}
	if l.lostAfterFound("steady") {
		t.Errorf("the tool was dropped across the restart: %v", l.sets)
	}
}

func echoTool(name string) *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: name, Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult("ok"), nil
		}),
	}
}

// TestRefreshInALoopRunsOneBackgroundRound calls Refresh again and again, as
// WaitTool does: at most one background round is in flight, so each worker
// answers the synchronous rounds and one more, not a round per call for the
// whole window.
func TestRefreshInALoopRunsOneBackgroundRound(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echoTool("counted")}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var infos atomic.Int32
	counter := bustest.MustConnect(t, srv)
	if _, err := counter.Subscribe("$SRV.INFO", func(*nats.Msg) { infos.Add(1) }); err != nil {
		t.Fatal(err)
	}
	counter.Flush()
	f, _ := watch(t, nc, fleet.FleetConfig{Interval: time.Hour, Wait: 50 * time.Millisecond, Window: time.Hour})
	const calls = 10
	for range calls {
		if err := f.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	counter.Flush()
	// WatchFleet's own Refresh and the loop's: one synchronous round each,
	// plus the one background round, which lasts the whole (hour-long)
	// window.
	if got, want := int(infos.Load()), calls+1+1; got != want {
		t.Errorf("$SRV.INFO requests = %d, want %d", got, want)
	}
}
