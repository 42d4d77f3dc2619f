package orchestrator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestInterruptedRunResumesBeforeLaterInput cuts an orchestrator off in the
// middle of a run, as a crash does (its input stays unacknowledged for the
// whole ack wait), and sends the session a second message. The next
// orchestrator resumes the interrupted run at once, from the store, before
// the second message; each answer is built from its own message's results.
// The interrupted batch also calls a tool with side effects, so that its
// assistant message is stored before the calls run.
func TestInterruptedRunResumesBeforeLaterInput(t *testing.T) {
	var calls atomic.Int32
	inCall := make(chan struct{})
	lookup := tool("lookup", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		if calls.Add(1) == 1 {
			close(inCall)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return agentfleet.TextResult("found " + string(c.Arguments["q"].(string))), nil
	})
	first := newScript().on("o", use(`note {}`, `lookup {"q":"a"}`))
	f := startFleet(t, orchestrator.Config{Model: first, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{lookup, noted()}})
	out := outs(t, f.nc, "default", "o")
	publish(t, f.nc, "agent.in.default.o", "", `{"content":"find a","id":"a"}`)
	<-inCall
	// The first orchestrator is cut off: it can neither store nor settle.
	f.orchConn.Close()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	f.orch.Close(stopped)
	publish(t, f.nc, "agent.in.default.o", "", `{"content":"find b","id":"b"}`)

	second := newScript().on("o", sayResults(), use(`lookup {"q":"b"}`), sayResults())
	logs := new(syncBuffer)
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: second, Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	a := next(t, out)
	if d := time.Since(started); d > 5*time.Second {
		t.Errorf("the interrupted run resumed after %v, want within 5s (the ack wait is 30s)", d)
	}
	b := next(t, out)
	// The start-up says what it recovers, at info level.
	bustest.Eventually(t, "the recovery summary", func() bool { return strings.Contains(logs.String(), "recovered: ") })
	p := bus.Partition("default", "o")
	for _, want := range []string{fmt.Sprintf(`msg="recovering: 1 sessions of partition %d have input in the stream, loading them"`, p), `msg="resuming run" agent=default session=o`,
		fmt.Sprintf(`msg="recovered: 1 interrupted runs resumed" partition=%d sessions=1 runs=1`, p)} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	if got := agentfleet.JoinText(a.Content); got != "note=noted; lookup=found a" {
		t.Errorf("first answer = %q, want the interrupted run's own result", got)
	}
	if got := agentfleet.JoinText(b.Content); got != "lookup=found b" {
		t.Errorf("second answer = %q", got)
	}
	st := loadHistory(t, f.nc, "default", "o")
	if got, want := roleList(st.Messages()), "user:find a assistant tool tool assistant user:find b assistant tool assistant"; got != want {
		t.Errorf("stored history = %s\nwant %s", got, want)
	}
	if e := st.Ended(); e[a.RunID] != 1 || e[b.RunID] != 1 || len(e) != 2 {
		t.Errorf("end records = %v, want one for each of %s and %s", e, a.RunID, b.RunID)
	}
}

// TestRetriedInputGetsTheStoredAnswer retries an ask, and re-sends an in
// message with an id that was answered: each gets the original final
// message, and the model is not asked again.
func TestRetriedInputGetsTheStoredAnswer(t *testing.T) {
	model := newScript().on("re", say("the one answer")).on("in", say("answered once"))
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	first := f.ask(t, "default", "re", `{"content":"q","id":"q1"}`)
	again := f.ask(t, "default", "re", `{"content":"q","id":"q1"}`)
	if agentfleet.JoinText(again.Content) != "the one answer" || again.RunID != first.RunID || again.StopReason != agentfleet.StopReasonStop {
		t.Errorf("retried ask = %s %q %s, want the first answer of run %s", again.RunID, agentfleet.JoinText(again.Content), again.StopReason, first.RunID)
	}
	out := outs(t, f.nc, "default", "in")
	publish(t, f.nc, "agent.in.default.in", "", `{"content":"q","id":"i1"}`)
	one := next(t, out)
	publish(t, f.nc, "agent.in.default.in", "", `{"content":"q","id":"i1"}`) // another stream message, same id
	two := next(t, out)
	if two.RunID != one.RunID || agentfleet.JoinText(two.Content) != "answered once" {
		t.Errorf("re-sent in = %s %q, want the answer of run %s", two.RunID, agentfleet.JoinText(two.Content), one.RunID)
	}
	if n, m := len(model.requests("re")), len(model.requests("in")); n != 1 || m != 1 {
		t.Errorf("model calls = %d and %d, want 1 each", n, m)
	}
}

// TestNATSOutageLongerThanLeaseTTL takes the server away for longer than
// the lease TTL: the orchestrator's lease is in doubt (it writes nothing)
// while NATS is away; when NATS is back its key has expired, so the lease
// is lost and every partition with it; it keeps running, joins again, and
// owns and serves every partition again.
func TestNATSOutageLongerThanLeaseTTL(t *testing.T) {
	addr, dir := bustest.FreeAddr(t), t.TempDir()
	srv := bustest.MustRunNATSAt(t, addr, dir)
	url := srv.ClientURL()
	connect := func() *nats.Conn {
		nc, err := bus.Connect(bus.ConnectConfig{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	w, err := toolrpc.Serve(connect(), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var lost atomic.Int32
	model := newScript().on("out", say("before"), say("after"))
	o, err := orchestrator.New(connect(), orchestrator.Config{Model: model, Durable: true, LeaseTTL: time.Second,
		Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}, OnLeaseLost: func() { lost.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o.Close(context.Background())
	client := connect()
	ask := func(want string) {
		t.Helper()
		var reply *nats.Msg
		bustest.Eventually(t, "an answer to an ask", func() bool {
			reply, err = client.Request("agent.ask.default.out", []byte(`{"content":"hi","id":"`+want+`"}`), 2*time.Second)
			return err == nil
		})
		if !strings.Contains(string(reply.Data), want) {
			t.Errorf("answer = %s, want %q", reply.Data, want)
		}
	}
	ask("before")
	srv.Shutdown()
	srv.WaitForShutdown()
	bustest.Eventually(t, "the lease in doubt", func() bool { return errors.Is(orchestrator.LeaseOf(o), partition.ErrInDoubt) })
	if lost.Load() != 0 {
		t.Error("the lease was given up while NATS was away; it is in doubt until NATS answers")
	}
	// The outage lasts twice the TTL, past the member key's expiry.
	time.Sleep(2 * time.Second)
	bustest.MustRunNATSAt(t, addr, dir)
	bustest.Eventually(t, "the lease to be lost", func() bool { return lost.Load() == 1 })
	bustest.Eventually(t, "the orchestrator to own every partition again", func() bool { return len(o.Partitions()) == bus.Partitions })
	ask("after")
}

func roleList(ms []agentfleet.Message) string {
	var out []string
	for _, m := range ms {
		s := m.MessageRole()
		if u, ok := m.(*agentfleet.UserMessage); ok {
			s += ":" + agentfleet.JoinText(u.Content)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestSessionsWithoutJetStreamAreEvicted keeps sessions in memory only: an
// idle one still leaves memory after SessionIdle.
func TestSessionsWithoutJetStreamAreEvicted(t *testing.T) {
	model := newScript().on("m", say("hi"))
	f := startFleet(t, orchestrator.Config{Model: model, SessionIdle: 50 * time.Millisecond}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	f.ask(t, "default", "m", "hello")
	bustest.Eventually(t, "the idle session to leave memory", func() bool { return f.orch.Sessions() == 0 })
}

// TestSessionQueueIsBounded fills a session's queue behind a run that does
// not end: input beyond the bound is refused with an error that says so, and
// the queued input is still answered once the run ends.
func TestSessionQueueIsBounded(t *testing.T) {
	release := make(chan struct{})
	model := newScript().on("full", func(req *loopRequest) *agentfleet.AssistantMessage { <-release; return say("first")(req) },
		say("the rest"))
	f := startFleet(t, orchestrator.Config{Model: model, SessionQueue: 2}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	out := outs(t, f.nc, "default", "full")
	if err := f.nc.Publish("agent.in.default.full", []byte("one")); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the first run to start", func() bool { return len(model.requests("full")) == 1 })
	for _, text := range []string{"two", "three"} {
		if err := f.nc.Publish("agent.in.default.full", []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := f.orch.Session("default", "full")
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "two messages queued", func() bool { return s.Queued() == 2 })
	reply, err := f.nc.Request("agent.ask.default.full", []byte("four"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reply.Data), "has 2 messages queued, the limit is 2") {
		t.Errorf("reply to input beyond the bound = %s", reply.Data)
	}
	close(release)
	if got := agentfleet.JoinText(next(t, out).Content); got != "first" {
		t.Errorf("first answer = %q", got)
	}
	if got := agentfleet.JoinText(next(t, out).Content); got != "the rest" {
		t.Errorf("second answer = %q", got)
	}
	if got, want := roles(model.requests("full")[1].Messages), "user:one assistant user:two user:three"; got != want {
		t.Errorf("the second run saw %s, want %s", got, want)
	}
}

// TestUndecodableHistoryRecord stores a record that does not decode in a
// session's history: the session loads without it, an error event names
// its stream sequence, and the session answers.
func TestUndecodableHistoryRecord(t *testing.T) {
	model := newScript().on("bad", say("still here"))
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	errs, err := f.nc.SubscribeSync("agent.events.default.bad.error")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(f.nc)
	m := nats.NewMsg("agent.history.default.bad")
	m.Data = []byte(`{"role":"robot"}`)
	m.Header.Set(history.HeaderRunID, "r0")
	ack, err := js.PublishMsg(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if got := agentfleet.JoinText(f.ask(t, "default", "bad", "hello").Content); got != "still here" {
		t.Errorf("answer = %q", got)
	}
	e, err := errs.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no error event: %v", err)
	}
	if want := fmt.Sprintf("history record %d of session bad skipped", ack.Sequence); !strings.Contains(string(e.Data), want) {
		t.Errorf("error event = %s, want it to say %q", e.Data, want)
	}
}

// syncBuffer is a log destination that tests may read while it is written.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
