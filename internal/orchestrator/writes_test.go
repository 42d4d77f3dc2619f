package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// storedMessages counts the messages the history stream holds for one
// session: each is one conditional publish the orchestrator waited for.
func storedMessages(t *testing.T, nc *nats.Conn, agent, session string) uint64 {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	subjects, _ := bus.NewSubjects("")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, history.StreamName(subjects))
	if err != nil {
		t.Fatal(err)
	}
	subject := subjects.History(agent, session)
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

// sideEffect is a tool that is neither read-only nor idempotent.
func sideEffect(name string, h agentfleet.HandlerFunc) *agentfleet.Tool {
	t := tool(name, false, h)
	t.Annotations = agentfleet.Annotations{}
	return t
}

// noted is a tool with side effects that answers "noted" at once.
func noted() *agentfleet.Tool {
	return sideEffect("note", func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
		return agentfleet.TextResult("noted"), nil
	})
}

// TestDurableRunWrites counts what a durable run of two tool turns stores
// in its session's history: the records, and the stored messages (each a
// conditional publish waited for).
func TestDurableRunWrites(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tool     func(string) *agentfleet.Tool
		records  int
		messages uint64
	}{
		// Idempotent calls run again after a crash: the whole run is one
		// stored message, written before its answer goes out.
		{"idempotent", echo, 7, 1},
		{"read-only", func(name string) *agentfleet.Tool {
			t := echo(name)
			t.Annotations = agentfleet.Annotations{ReadOnly: true}
			return t
		}, 7, 1},
		// A call with side effects runs only after the records before it
		// are stored, and its result is stored as soon as it is known.
		{"side effects", func(name string) *agentfleet.Tool {
			return sideEffect(name, func(_ context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
				b, _ := json.Marshal(c.Arguments)
				return agentfleet.TextResult(name + string(b)), nil
			})
		}, 7, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := newScript().on("w", use(`echo {"a":1}`), use(`echo {"a":2}`), say("done"))
			f := startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{tc.tool("echo")}})
			if got := f.ask(t, "default", "w", "go"); agentfleet.JoinText(got.Content) != "done" {
				t.Fatalf("final = %q, want done", agentfleet.JoinText(got.Content))
			}
			st := loadHistory(t, f.nc, "default", "w")
			msgs := storedMessages(t, f.nc, "default", "w")
			t.Logf("%s: %d records in %d stored messages", tc.name, len(st.Records), msgs)
			if got := len(st.Records); got != tc.records {
				t.Errorf("records = %d, want %d", got, tc.records)
			}
			if msgs != tc.messages {
				t.Errorf("stored messages = %d, want %d", msgs, tc.messages)
			}
		})
	}
}

// TestSideEffectCallIsStoredFirst has the worker of a tool with side
// effects read the session's stored history, over NATS, as each call
// arrives: the assistant message that made the call is there already,
// with the records before it, and the results of the earlier calls.
func TestSideEffectCallIsStoredFirst(t *testing.T) {
	model := newScript().on("f", use(`act {"a":1}`), use(`act {"a":2}`), say("done"))
	var f *testFleet
	seen := make(chan string, 2)
	act := sideEffect("act", func(_ context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		st, err := tryLoadHistory(f.nc, "default", "f")
		if err != nil {
			seen <- "load: " + err.Error()
			return agentfleet.TextResult("?"), nil
		}
		var got []string
		for _, m := range st.Messages() {
			switch m := m.(type) {
			case *agentfleet.UserMessage:
				got = append(got, "user")
			case *agentfleet.AssistantMessage:
				for _, tc := range m.ToolCalls() {
					got = append(got, "call "+tc.ID)
				}
			case *agentfleet.ToolResultMessage:
				got = append(got, "result "+m.ToolCallID)
			}
		}
		seen <- c.ID + ": " + strings.Join(got, ", ")
		return agentfleet.TextResult("acted"), nil
	})
	f = startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{act}})
	if got := f.ask(t, "default", "f", "go"); agentfleet.JoinText(got.Content) != "done" {
		t.Fatalf("final = %q, want done", agentfleet.JoinText(got.Content))
	}
	for _, want := range []string{
		"call_1_0: user, call call_1_0",
		"call_3_0: user, call call_1_0, result call_1_0, call call_3_0",
	} {
		if got := <-seen; got != want {
			t.Errorf("stored when the worker got the call: %q, want %q", got, want)
		}
	}
}

// TestHostileEnvelopeInHistory stores an envelope that lies about its
// record count in a session's history: the session loads without it, an
// error event names its stream sequence and what is wrong, and the session
// answers after it.
func TestHostileEnvelopeInHistory(t *testing.T) {
	model := newScript().on("env", say("still here"))
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	errs, err := f.nc.SubscribeSync("agent.events.default.env.error")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(f.nc)
	m := nats.NewMsg("agent.history.default.env")
	m.Data = []byte{history.EnvelopeVersion, 0xc8, 0x01, 0, 2, 'r', '1', 0, 2, '{', '}'} // 200 records declared, one there
	m.Header.Set(history.HeaderRecord, history.RecordBatch)
	ack, err := js.PublishMsg(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if got := agentfleet.JoinText(f.ask(t, "default", "env", "hello").Content); got != "still here" {
		t.Errorf("answer = %q", got)
	}
	e, err := errs.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no error event: %v", err)
	}
	for _, want := range []string{fmt.Sprintf("history record %d of session env skipped", ack.Sequence), "declares 200 records"} {
		if !strings.Contains(string(e.Data), want) {
			t.Errorf("error event = %s, want it to say %q", e.Data, want)
		}
	}
	if st := loadHistory(t, f.nc, "default", "env"); len(st.Skipped) != 1 || len(st.Ended()) != 1 {
		t.Errorf("history: %d skipped, %d runs ended; want 1 and 1", len(st.Skipped), len(st.Ended()))
	}
}

// TestHandoverStoresTheBuffer starts runs whose only call (idempotent, so
// nothing of them is stored yet) waits, then has a second orchestrator
// join: for the sessions whose partitions move, the first stores what
// waits in their history writers before it hands them over, and the new
// owner resumes each run from there (its model sees the stored call, and
// the call runs again) instead of making it again from its input.
func TestHandoverStoresTheBuffer(t *testing.T) {
	hold := make(chan struct{})
	var calls sync.Map // session → calls of the held tool
	held := tool("hold", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		n, _ := calls.LoadOrStore(c.Arguments["s"], new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return agentfleet.TextResult("held"), nil
	})
	first, second := newScript(), newScript()
	var sessions []string
	for i := range 8 {
		session := fmt.Sprintf("h%d", i)
		sessions = append(sessions, session)
		first.on(session, use(`hold {"s":"`+session+`"}`))
		second.on(session, sayResults())
	}
	f := startFleet(t, orchestrator.Config{Model: first, Durable: true, LeaseTTL: time.Second, Handover: 300 * time.Millisecond},
		toolrpc.ServerConfig{Tools: []*agentfleet.Tool{held}})
	bustest.Eventually(t, "the first to own every partition", func() bool { return len(f.orch.Partitions()) == bus.Partitions })
	for _, session := range sessions {
		publish(t, f.nc, "agent.in.default."+session, "", `{"content":"go","id":"`+session+`"}`)
	}
	bustest.Eventually(t, "every run to wait in its call", func() bool {
		n := 0
		calls.Range(func(any, any) bool { n++; return true })
		return n == len(sessions)
	})
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: second, Durable: true, LeaseTTL: time.Second,
		Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	bustest.Eventually(t, "32 partitions each", func() bool { return len(o2.Partitions()) == 32 })
	var moved []string
	for _, session := range sessions {
		if slices.Contains(o2.Partitions(), bus.Partition("default", session)) {
			moved = append(moved, session)
		}
	}
	if len(moved) == 0 {
		t.Skip("no session's partition moved")
	}
	bustest.Eventually(t, "the moved sessions' calls to run again", func() bool {
		for _, session := range moved {
			if n, ok := calls.Load(session); !ok || n.(*atomic.Int32).Load() < 2 {
				return false
			}
		}
		return true
	})
	close(hold)
	for _, session := range moved {
		bustest.Eventually(t, "the new owner's answer", func() bool {
			st, err := tryLoadHistory(f.nc, "default", session)
			return err == nil && len(st.Ended()) == 1
		})
		reqs := second.requests(session)
		if len(reqs) != 1 {
			t.Errorf("session %s: the new owner asked its model %d times, want 1", session, len(reqs))
			continue
		}
		if got, want := roles(reqs[0].Messages), "user:go assistant tool"; got != want {
			t.Errorf("session %s: the new owner's model saw %s, want %s (the run resumed from what was stored at the handover)", session, got, want)
		}
	}
}
