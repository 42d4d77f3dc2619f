package orchestrator_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go"
)

// inbox counts the answers published on one reply subject.
type inbox struct {
	subject string
	ch      chan *nats.Msg
}

func newInbox(t *testing.T, nc *nats.Conn) *inbox {
	t.Helper()
	ib := &inbox{subject: nats.NewInbox(), ch: make(chan *nats.Msg, 64)}
	sub, err := nc.ChanSubscribe(ib.subject, ib.ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	return ib
}

// askOn publishes an ask of session with reply subject ib, and the
// Nats-Msg-Id msgID if not empty.
func askOn(t *testing.T, nc *nats.Conn, ib *inbox, session, msgID, payload string) {
	t.Helper()
	m := nats.NewMsg("agent.ask.default." + session)
	m.Reply, m.Data = ib.subject, []byte(payload)
	if msgID != "" {
		m.Header.Set(nats.MsgIdHdr, msgID)
	}
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
}

// answers returns every answer ib holds once the session has answered a
// later ask (barrier).
func (ib *inbox) answers(t *testing.T, nc *nats.Conn, session string) []*agentfleet.AssistantMessage {
	t.Helper()
	barrier(t, nc, session)
	return ib.drain(t)
}

// barrier has session answer a later ask: its runs end one after the
// other, and the answers of one orchestrator come in the order it sent
// them, so that once nc (the connection the inboxes listen on) is flushed
// after that answer, every answer of the runs before is in, and one sent
// twice is counted, not raced.
func barrier(t *testing.T, nc *nats.Conn, session string) {
	t.Helper()
	m, err := nc.Request("agent.ask.default."+session, []byte(`{"content":"barrier"}`), 15*time.Second)
	if err != nil {
		t.Fatalf("the later ask of session %s: %v", session, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var later agentfleet.AssistantMessage
	if err := json.Unmarshal(m.Data, &later); err != nil || agentfleet.JoinText(later.Content) != "barrier" {
		t.Fatalf("the later ask of session %s got %s (%v)", session, m.Data, err)
	}
}

// drain returns the answers ib holds now.
func (ib *inbox) drain(t *testing.T) []*agentfleet.AssistantMessage {
	t.Helper()
	var out []*agentfleet.AssistantMessage
	for {
		select {
		case m := <-ib.ch:
			var a agentfleet.AssistantMessage
			if err := json.Unmarshal(m.Data, &a); err != nil {
				t.Fatalf("answer on %s does not decode: %v: %s", ib.subject, err, m.Data)
			}
			out = append(out, &a)
		default:
			return out
		}
	}
}

// runEnd waits for the end of a run of session.
func runEnd(t *testing.T, f *testFleet, session string) agentfleet.Event {
	t.Helper()
	return f.events.wait(t, "run.end of "+session, func(e agentfleet.Event) bool {
		return e.Type == agentfleet.EventRunEnd && e.Session == session
	})
}

func mode(durable bool) string {
	if durable {
		return "durable"
	}
	return "in memory"
}

// TestAskAnsweredOnce sends asks as `nats pub --reply` does and counts the
// messages on the reply subject: one answer per ask, in memory and durable
// (where the ask is relayed through the input stream and its owner reads it
// both from the stream, as it loads the session, and from its consumer),
// for an ask answered at once and for one whose run calls a tool.
func TestAskAnsweredOnce(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(mode(durable), func(t *testing.T) {
			model := newScript().
				on("plain", say("hello"), say("barrier")).
				on("tool", use(`echo {"x":1}`), sayResults(), say("barrier"))
			f := startFleet(t, orchestrator.Config{Model: model, Durable: durable}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
			for session, want := range map[string]string{"plain": "hello", "tool": `echo=echo{"x":1}`} {
				ib := newInbox(t, f.nc)
				askOn(t, f.nc, ib, session, "", "echo hello")
				end := runEnd(t, f, session)
				got := ib.answers(t, f.nc, session)
				if len(got) != 1 {
					t.Fatalf("session %s: %d answers on the reply subject, want 1", session, len(got))
				}
				if text := agentfleet.JoinText(got[0].Content); text != want || got[0].RunID != end.RunID {
					t.Errorf("session %s: answer %q of run %s, want %q of run %s", session, text, got[0].RunID, want, end.RunID)
				}
			}
		})
	}
}

// TestAskRetriedWithTheSameMsgID sends an ask, then the same ask with the
// same Nats-Msg-Id on another reply subject, once while its run is in
// flight and once after it ended: one run, and each request answered once,
// with that run's final message.
func TestAskRetriedWithTheSameMsgID(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(mode(durable), func(t *testing.T) {
			inCall, release := make(chan struct{}), make(chan struct{})
			var calls atomic.Int32
			slow := tool("slow", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
				if calls.Add(1) == 1 {
					close(inCall)
				}
				<-release
				return agentfleet.TextResult("done"), nil
			})
			model := newScript().on("r", use(`slow {}`), sayResults(), say("barrier"))
			obs := &counts{}
			f := startFleet(t, orchestrator.Config{Model: model, Durable: durable, Observer: obs}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{slow}})
			first, during, after := newInbox(t, f.nc), newInbox(t, f.nc), newInbox(t, f.nc)
			askOn(t, f.nc, first, "r", "k1", "find it")
			<-inCall
			askOn(t, f.nc, during, "r", "k1", "find it")
			bustest.Eventually(t, "the retry to wait for the run", func() bool { return obs.get("duplicate") == 1 })
			close(release)
			end := runEnd(t, f, "r")
			bustest.Eventually(t, "the first answer", func() bool { return len(first.ch) > 0 })
			askOn(t, f.nc, after, "r", "k1", "find it")
			bustest.Eventually(t, "the retry after the end to be answered", func() bool { return len(after.ch) > 0 })
			barrier(t, f.nc, "r")
			for name, ib := range map[string]*inbox{"first": first, "retried while running": during, "retried after the end": after} {
				got := ib.drain(t)
				if len(got) != 1 {
					t.Errorf("%s: %d answers on the reply subject, want 1", name, len(got))
					continue
				}
				if text := agentfleet.JoinText(got[0].Content); text != "slow=done" || got[0].RunID != end.RunID {
					t.Errorf("%s: answer %q of run %s, want %q of run %s", name, text, got[0].RunID, "slow=done", end.RunID)
				}
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("tool called %d times, want once", n)
			}
		})
	}
}

// TestAskAnsweredOnceAcrossAHandover stops the owner of a durable ask while
// its run is in a tool call, without grace: another orchestrator takes the
// session, reads the ask from the stream as it loads it and has it
// delivered again, resumes the run, and answers once.
func TestAskAnsweredOnceAcrossAHandover(t *testing.T) {
	var calls atomic.Int32
	inCall := make(chan struct{})
	lookup := tool("lookup", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		if calls.Add(1) == 1 {
			close(inCall)
			<-ctx.Done() // the first owner goes away meanwhile
			return nil, ctx.Err()
		}
		return agentfleet.TextResult("found it"), nil
	})
	first := newScript().on("h", use(`lookup {}`))
	f := startFleet(t, orchestrator.Config{Model: first, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{lookup}})
	ib := newInbox(t, f.nc)
	askOn(t, f.nc, ib, "h", "", "find it")
	<-inCall
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.orch.Close(stopped); err != nil {
		t.Fatal(err)
	}

	second := newScript().on("h", sayResults(), say("barrier"))
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: second, Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	end := runEnd(t, f, "h")
	got := ib.answers(t, f.nc, "h")
	if len(got) != 1 {
		t.Fatalf("%d answers on the reply subject, want 1", len(got))
	}
	if text := agentfleet.JoinText(got[0].Content); text != "lookup=found it" || got[0].RunID != end.RunID {
		t.Errorf("answer %q of run %s, want %q of run %s", text, got[0].RunID, "lookup=found it", end.RunID)
	}
}

// TestAskAnsweredAgainOnlyByANewOwner loses the owner's acknowledgements of
// a durable ask, so that the server delivers it again and again: the owner
// answered it once and does not answer its redeliveries. Then that owner
// stops without its ack stored, as one that died would: the next owner
// cannot know the ask was answered, and answers it again from the stored
// history, with the same final message of the same run.
func TestAskAnsweredAgainOnlyByANewOwner(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	proxy := newAckDropper(t, srv.Addr().String())
	oc, err := bus.Connect(bus.ConnectConfig{URL: proxy.url()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oc.Close)
	events := subscribeEvents(t, nc, "agent.events.>")
	f := &testFleet{srv: srv, nc: nc, events: events}
	obs := &counts{}
	model := newScript().on("f", say("the answer"), say("barrier"))
	o, err := orchestrator.New(oc, orchestrator.Config{Model: model, Durable: true, Observer: obs,
		DurableConfig: input.DurableConfig{AckWait: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	proxy.drop.Store(true)
	ib := newInbox(t, nc)
	askOn(t, nc, ib, "f", "", "ask")
	end := runEnd(t, f, "f")
	bustest.Eventually(t, "the ask delivered again twice", func() bool { return obs.get("duplicate") >= 2 && proxy.dropped.Load() >= 3 })
	if got := ib.answers(t, nc, "f"); len(got) != 1 {
		t.Fatalf("%d answers from the owner, want 1 (its redeliveries are not answered)", len(got))
	}

	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	o.Close(stopped)
	oc.Close()
	next := newScript().on("f", say("barrier"))
	o2, err := orchestrator.New(bustest.MustConnect(t, srv), orchestrator.Config{Model: next, Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	bustest.Eventually(t, "the new owner's answer", func() bool { return len(ib.ch) > 0 })
	got := ib.answers(t, nc, "f")
	if len(got) != 1 {
		t.Fatalf("%d answers from the new owner, want 1", len(got))
	}
	if text := agentfleet.JoinText(got[0].Content); text != "the answer" || got[0].RunID != end.RunID {
		t.Errorf("the new owner answered %q of run %s, want %q of run %s", text, got[0].RunID, "the answer", end.RunID)
	}
	if n := len(next.requests("f")); n != 1 {
		t.Errorf("the new owner's model was asked %d times, want once (the barrier; the ask is not run again)", n)
	}
}
