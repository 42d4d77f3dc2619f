package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// counts is an Observer that counts input outcomes.
type counts struct {
	mu sync.Mutex
	in map[string]int
}

func (c *counts) Event(*agentfleet.Event)    {}
func (c *counts) ToolAttempt(string, string) {}
func (c *counts) Input(outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.in == nil {
		c.in = map[string]int{}
	}
	c.in[outcome]++
}
func (c *counts) get(outcome string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.in[outcome]
}

// outs collects the final messages of a session.
func outs(t *testing.T, nc *nats.Conn, agent, session string) chan *agentfleet.AssistantMessage {
	t.Helper()
	ch := make(chan *agentfleet.AssistantMessage, 16)
	sub, err := nc.Subscribe("agent.out."+agent+"."+session, func(m *nats.Msg) {
		var a agentfleet.AssistantMessage
		if err := json.Unmarshal(m.Data, &a); err != nil {
			t.Errorf("out message: %v", err)
		}
		ch <- &a
	})
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	t.Cleanup(func() { sub.Unsubscribe() })
	return ch
}

func next(t *testing.T, ch chan *agentfleet.AssistantMessage) *agentfleet.AssistantMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(15 * time.Second):
		t.Fatal("no final message within 15s")
		return nil
	}
}

func loadHistory(t *testing.T, nc *nats.Conn, agent, session string) *history.Loaded {
	t.Helper()
	st, err := tryLoadHistory(nc, agent, session)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// tryLoadHistory loads a session's stored history, for tests that wait for
// a server coming back.
func tryLoadHistory(nc *nats.Conn, agent, session string) (*history.Loaded, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	subjects, _ := bus.NewSubjects("")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := history.Open(ctx, js, subjects, "", history.Config{})
	if err != nil {
		return nil, err
	}
	return h.Load(ctx, agent, session)
}

func publish(t *testing.T, nc *nats.Conn, subject, msgID, payload string) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = []byte(payload)
	if msgID != "" {
		m.Header.Set(nats.MsgIdHdr, msgID)
	}
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
}

func TestDurableDeduplicates(t *testing.T) {
	model := newScript().on("d", say("first"), say("second"))
	obs := &counts{}
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true, Observer: obs}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	out := outs(t, f.nc, "default", "d")
	// The same Nats-Msg-Id twice: JetStream keeps one.
	publish(t, f.nc, "agent.in.default.d", "h1", "one")
	publish(t, f.nc, "agent.in.default.d", "h1", "one")
	next(t, out)
	// The same payload id twice, after its run ended: the orchestrator
	// acks the second without a run.
	publish(t, f.nc, "agent.in.default.d", "", `{"content":"two","id":"p2"}`)
	next(t, out)
	publish(t, f.nc, "agent.in.default.d", "", `{"content":"two again","id":"p2"}`)
	bustest.Eventually(t, "the duplicate to be counted", func() bool { return obs.get("duplicate") == 1 })

	st := loadHistory(t, f.nc, "default", "d")
	var users []string
	for _, m := range st.Messages() {
		if u, ok := m.(*agentfleet.UserMessage); ok {
			users = append(users, u.ID+"="+agentfleet.JoinText(u.Content))
		}
	}
	if got, want := strings.Join(users, " "), "h1=one p2=two"; got != want {
		t.Errorf("stored user messages = %s, want %s", got, want)
	}
	if len(st.Ended()) != 2 {
		t.Errorf("ended runs = %d, want 2", len(st.Ended()))
	}
}

// TestRestartResumesRun stops an orchestrator in the middle of a tool call
// and starts another on the same NATS: the input is delivered again, the run
// resumes from the stored history, the idempotent call runs again, and the
// final message is published once; the history holds the user message once
// and each tool result once. The batch also calls a tool with side effects,
// so that its assistant message is stored before the calls run (a batch of
// idempotent calls alone waits in the writer's buffer, and is made again
// from the input).
func TestRestartResumesRun(t *testing.T) {
	var calls atomic.Int32
	inCall := make(chan struct{})
	pay := tool("lookup", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		if calls.Add(1) == 1 {
			close(inCall)
			<-ctx.Done() // the first orchestrator goes away meanwhile
			return nil, ctx.Err()
		}
		return agentfleet.TextResult("found it"), nil
	})
	first := newScript().on("r", use(`note {}`, `lookup {"q":"x"}`))
	f := startFleet(t, orchestrator.Config{Model: first, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{pay, noted()}})
	out := outs(t, f.nc, "default", "r")
	publish(t, f.nc, "agent.in.default.r", "", `{"content":"find x","id":"u1"}`)
	<-inCall
	stopped, cancel := context.WithCancel(context.Background())
	cancel() // no grace: leave the run where it is
	if err := f.orch.Close(stopped); err != nil {
		t.Fatal(err)
	}

	second := newScript().on("r", sayResults())
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: second, Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	final := next(t, out)
	if got, want := agentfleet.JoinText(final.Content), "note=noted; lookup=found it"; got != want {
		t.Errorf("final = %q (%s %s), want %q", got, final.StopReason, final.ErrorMessage, want)
	}
	if calls.Load() != 2 {
		t.Errorf("tool calls = %d, want 2 (one lost with the first orchestrator, one resumed)", calls.Load())
	}
	st := loadHistory(t, f.nc, "default", "r")
	var roles []string
	for _, m := range st.Messages() {
		roles = append(roles, m.MessageRole())
	}
	if got, want := strings.Join(roles, " "), "user assistant tool tool assistant"; got != want {
		t.Errorf("stored history = %s, want %s", got, want)
	}
	if st.Ended()[final.RunID] != 1 {
		t.Error("the resumed run's end is not stored")
	}
	select {
	case extra := <-out:
		t.Errorf("a second final message: %+v", extra)
	default:
	}
}

func TestIdleSessionsAreEvictedAndReloaded(t *testing.T) {
	model := newScript().on("e", say("one"), say("two"))
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true, SessionIdle: 20 * time.Millisecond}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	if got := agentfleet.JoinText(f.ask(t, "default", "e", "first").Content); got != "one" {
		t.Fatalf("first = %q", got)
	}
	bustest.Eventually(t, "the session to be evicted", func() bool { return f.orch.Sessions() == 0 })
	if got := agentfleet.JoinText(f.ask(t, "default", "e", "second").Content); got != "two" {
		t.Fatalf("second = %q", got)
	}
	if got, want := roles(model.requests("e")[1].Messages), "user:first assistant user:second"; got != want {
		t.Errorf("after reload the model saw %s, want %s", got, want)
	}
}

func TestLateObserverReplaysEvents(t *testing.T) {
	model := newScript().on("late", use(`echo {"text":"x"}`), say("done"))
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	f.ask(t, "default", "late", "go")
	f.events.wait(t, "run.end", isType(agentfleet.EventRunEnd))
	// A dashboard that connects now replays the session from the stream.
	js, _ := jetstream.New(f.nc)
	cons, err := js.OrderedConsumer(context.Background(), "AGENT_EVENTS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"agent.events.default.late.>"}})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for len(types) == 0 || types[len(types)-1] != "run.end" {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("replay after %v: %v", types, err)
		}
		var e agentfleet.Event
		json.Unmarshal(m.Data(), &e)
		types = append(types, string(e.Type))
	}
	if got := strings.Join(types, " "); !strings.HasPrefix(got, "run.start turn.start message.start") || !strings.Contains(got, "tool.start tool.end") {
		t.Errorf("replayed %s", got)
	}
}

// TestMalformedBurst interleaves bad input with good: every good message is
// answered, every bad one is an error event, and memory stays bounded.
func TestMalformedBurst(t *testing.T) {
	const good, bad = 20, 400
	model := newScript()
	for i := range good {
		model.on(fmt.Sprintf("g%d", i), say(fmt.Sprintf("answer %d", i)))
	}
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	out := outs(t, f.nc, "default", "*")
	var errorsSeen atomic.Int32
	sub, _ := f.nc.Subscribe("agent.events.>", func(m *nats.Msg) {
		if strings.HasSuffix(m.Subject, ".error") {
			errorsSeen.Add(1)
		}
	})
	defer sub.Unsubscribe()
	f.nc.Flush()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	garbage := []string{`{"content":`, `{"content":[{"type":"audio"}]}`, `{"nope":1}`, "", `{"content":[{"type":"image","data":"!!","mime_type":"image/png"}]}`}
	for i := range bad {
		publish(t, f.nc, "agent.in.default.burst", "", garbage[i%len(garbage)]+strings.Repeat(" ", i%7))
		if i%(bad/good) == 0 {
			publish(t, f.nc, fmt.Sprintf("agent.in.default.g%d", i/(bad/good)), "", `{"content":"question"}`)
		}
	}
	answered := map[string]bool{}
	for range good {
		answered[agentfleet.JoinText(next(t, out).Content)] = true
	}
	if len(answered) != good {
		t.Errorf("answers = %v, want %d different ones", answered, good)
	}
	bustest.Eventually(t, "an error event for every bad message", func() bool { return errorsSeen.Load() >= bad })
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 32<<20 {
		t.Errorf("heap grew by %d MiB over the burst", grew>>20)
	}
}

// TestNATSRestart restarts the NATS server (same port, same JetStream store)
// while a tool call is in flight: every client reconnects, the call ends
// under the retry policy and runs again, the run completes, and new input is
// served.
func TestNATSRestart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	srv, err := server.RunEmbedded(server.EmbeddedConfig{Listen: addr, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	inCall := make(chan struct{})
	wait := tool("wait", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		if calls.Add(1) == 1 {
			close(inCall)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return agentfleet.TextResult("waited"), nil
	})
	wait.Annotations = agentfleet.Annotations{Idempotent: true}
	model := newScript().on("nr", use(`wait {}`), sayResults()).on("after", say("still serving"))
	connect := func() *nats.Conn {
		nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	w, err := toolrpc.Serve(connect(), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{wait}, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	o, err := orchestrator.New(connect(), orchestrator.Config{Model: model, Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond},
		Tools: toolrpc.ClientConfig{RetryBackoff: 50 * time.Millisecond, MaxAttempts: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o.Close(context.Background())
	client := connect()
	publish(t, client, "agent.in.default.nr", "", "go")
	<-inCall

	srv.Shutdown()
	srv.WaitForShutdown()
	srv, err = server.RunEmbedded(server.EmbeddedConfig{Listen: addr, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// After the deferred closes of the worker and the orchestrator.
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})

	// The final message on agent.out is core NATS, and this client may
	// still be reconnecting when it goes out; the stored history says how
	// the run ended.
	var last string
	bustest.Eventually(t, "the run to end", func() bool {
		if !client.IsConnected() {
			return false
		}
		st, err := tryLoadHistory(client, "default", "nr")
		if err != nil || len(st.Ended()) == 0 {
			return false
		}
		last = agentfleet.JoinText(st.Messages()[len(st.Messages())-1].(*agentfleet.AssistantMessage).Content)
		return true
	})
	if want := "wait=waited"; last != want {
		t.Errorf("final = %q, want %q", last, want)
	}
	reply, err := client.Request("agent.ask.default.after", []byte("hello"), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reply.Data), "still serving") {
		t.Errorf("ask after the restart = %s", reply.Data)
	}
}

// TestDuplicateWhileQueued sends a message twice while it waits behind a
// running run: it is taken once.
func TestDuplicateWhileQueued(t *testing.T) {
	release := make(chan struct{})
	model := newScript().on("q", func(req *loopRequest) *agentfleet.AssistantMessage { <-release; return say("first")(req) }, say("second"))
	obs := &counts{}
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true, Observer: obs}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	out := outs(t, f.nc, "default", "q")
	publish(t, f.nc, "agent.in.default.q", "", `{"content":"a","id":"a"}`)
	bustest.Eventually(t, "the first run to start", func() bool { return len(model.requests("q")) == 1 })
	publish(t, f.nc, "agent.in.default.q", "", `{"content":"b","id":"b"}`)
	publish(t, f.nc, "agent.in.default.q", "", `{"content":"b again","id":"b"}`)
	bustest.Eventually(t, "both copies of b to be handled", func() bool { return obs.get("accepted")+obs.get("duplicate") == 3 })
	close(release)
	next(t, out)
	next(t, out)
	if got, want := roles(model.requests("q")[1].Messages), "user:a assistant user:b"; got != want {
		t.Errorf("second run saw %s, want %s", got, want)
	}
	if obs.get("duplicate") != 1 {
		t.Errorf("duplicates = %d, want 1", obs.get("duplicate"))
	}
}

// TestPartitionsShared runs two orchestrators on one NATS: they share the
// partitions evenly, each session is answered by its partition's owner
// (whichever orchestrator the server hands the ask to), and when one stops
// the other takes every partition over and carries its sessions on from
// the stored history.
func TestPartitionsShared(t *testing.T) {
	first, second := newScript(), newScript()
	for i := range 24 {
		session := fmt.Sprintf("s%02d", i)
		first.on(session, say("from the first"))
		second.on(session, say("from the second"), say("from the second"))
	}
	f := startFleet(t, orchestrator.Config{Model: first, Durable: true, LeaseTTL: time.Second},
		toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: second, Durable: true, LeaseTTL: time.Second,
		Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	bustest.Eventually(t, "32 partitions each", func() bool {
		return len(f.orch.Partitions()) == 32 && len(o2.Partitions()) == 32
	})
	owner := map[int]string{}
	for _, p := range f.orch.Partitions() {
		owner[p] = "from the first"
	}
	for _, p := range o2.Partitions() {
		owner[p] = "from the second"
	}
	sessions := map[string]bool{} // sessions answered, by whether the first owns them
	for i := range 24 {
		session := fmt.Sprintf("s%02d", i)
		want := owner[bus.Partition("default", session)]
		if got := agentfleet.JoinText(f.ask(t, "default", session, "one").Content); got != want {
			t.Errorf("session %s (partition %d) answered %q, want %q", session, bus.Partition("default", session), got, want)
		}
		sessions[session] = want == "from the first"
	}
	if err := f.orch.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the second to own every partition", func() bool { return len(o2.Partitions()) == bus.Partitions })
	for session, moved := range sessions {
		if got := agentfleet.JoinText(f.ask(t, "default", session, "two").Content); got != "from the second" {
			t.Errorf("session %s: second answer = %q", session, got)
		}
		if !moved {
			continue
		}
		reqs := second.requests(session)
		if len(reqs) == 0 {
			t.Errorf("session %s: the second orchestrator's model saw nothing", session)
			continue
		}
		if got, want := roles(reqs[len(reqs)-1].Messages), "user:one assistant user:two"; got != want {
			t.Errorf("session %s: the new owner saw %s, want %s", session, got, want)
		}
	}
}

// TestLongRunIsKeptAlive runs longer than the ack wait: in-progress acks
// keep the input from being delivered again meanwhile.
func TestLongRunIsKeptAlive(t *testing.T) {
	const ackWait = 600 * time.Millisecond
	model := newScript().on("long", func(req *loopRequest) *agentfleet.AssistantMessage {
		<-time.After(4 * ackWait) // the run outlives several ack waits
		return say("done at last")(req)
	})
	obs := &counts{}
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true, Observer: obs, DurableConfig: input.DurableConfig{AckWait: ackWait}},
		toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	out := outs(t, f.nc, "default", "long")
	publish(t, f.nc, "agent.in.default.long", "", "take your time")
	if got := agentfleet.JoinText(next(t, out).Content); got != "done at last" {
		t.Errorf("answer = %q", got)
	}
	if n := obs.get("duplicate"); n != 0 {
		t.Errorf("the input was delivered again %d times during the run", n)
	}
	if n := len(model.requests("long")); n != 1 {
		t.Errorf("model calls = %d, want 1", n)
	}
}

// TestDurableSteer steers a running run through the input stream: the
// steering message enters before the next model call, in the same run.
func TestDurableSteer(t *testing.T) {
	inTool := make(chan struct{})
	release := make(chan struct{})
	block := tool("block", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		close(inTool)
		<-release
		return agentfleet.TextResult("unblocked"), nil
	})
	model := newScript().on("st", use(`block {}`), say("steered"))
	obs := &counts{}
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true, Observer: obs}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{block}})
	out := outs(t, f.nc, "default", "st")
	publish(t, f.nc, "agent.in.default.st", "", "start")
	<-inTool
	publish(t, f.nc, "agent.steer.default.st", "", "change of plan")
	bustest.Eventually(t, "the steering message to be taken", func() bool { return obs.get("accepted") == 2 })
	close(release)
	if got := agentfleet.JoinText(next(t, out).Content); got != "steered" {
		t.Errorf("answer = %q", got)
	}
	if got, want := roles(model.requests("st")[1].Messages), "user:start assistant tool user:change of plan"; got != want {
		t.Errorf("second model call saw %s, want %s", got, want)
	}
}
