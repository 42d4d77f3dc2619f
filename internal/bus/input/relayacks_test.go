package input

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// relayRig is an input relaying asks to a server whose "stream" is a
// subscriber of the test: store answers each relayed store as the test
// says, or not at all when it returns nil.
func relayRig(t *testing.T, timeout time.Duration, limit int, store func(m *nats.Msg) []byte) (*Input, *nats.Conn) {
	t.Helper()
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	in := NewInput(nc, subjects, InputHandlerFunc(func(in *Inbound) error {
		t.Errorf("the handler got %s of %s from a relay", in.Kind, in.Session)
		return nil
	}), events.NewPublisher(nc, subjects, nil), nil)
	in.relays.timeout, in.relays.limit = timeout, limit
	js, _ := jetstream.New(nc)
	in.Relayed(js)
	if _, err := nc.Subscribe(subjects.Prefix+".relay.>", func(m *nats.Msg) {
		if ack := store(m); ack != nil {
			_ = m.Respond(ack)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Stop() })
	return in, bustest.MustConnect(t, srv)
}

// ask sends an ask and returns its error answer, or "" when it is not
// answered within wait.
func ask(t *testing.T, nc *nats.Conn, session string, wait time.Duration) string {
	t.Helper()
	reply, err := nc.Request("agent.ask.default."+session, []byte("hello"), wait)
	if err != nil {
		return ""
	}
	var a agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &a); err != nil || a.StopReason != agentfleet.StopReasonError {
		t.Fatalf("ask of %s answered %s (%v)", session, reply.Data, err)
	}
	return a.ErrorMessage
}

// settled reports that no store waits; with stopped, that the watcher
// has ended too.
func (ra *relayAcks) settled(stopped bool) func() bool {
	return func() bool {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		return len(ra.waiting) == 0 && len(ra.queue) == 0 && (!stopped || !ra.running)
	}
}

// TestRelayUnacknowledged relays asks to a stream that never answers: each
// ask is answered, at its deadline, with an error that says so, and the
// watcher of the stores ends with nothing left waiting.
func TestRelayUnacknowledged(t *testing.T) {
	in, nc := relayRig(t, 100*time.Millisecond, 0, func(*nats.Msg) []byte { return nil })
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			if got := ask(t, nc, fmt.Sprintf("s%d", i), 10*time.Second); !strings.Contains(got, "no acknowledgement from the input stream in 100ms") {
				t.Errorf("ask %d answered %q", i, got)
			}
		})
	}
	wg.Wait()
	bustest.Eventually(t, "the relay watcher to end", in.relays.settled(true))
}

// TestRelayStall fills the bound of stores waiting: a relay past it waits
// relayStall for one to be settled, then fails with an error that names the
// bound; once the stores waiting are settled, the next relay is stored.
func TestRelayStall(t *testing.T) {
	var stored atomic.Int64
	release := make(chan struct{})
	var held []*nats.Msg
	var mu sync.Mutex
	in, nc := relayRig(t, time.Minute, 2, func(m *nats.Msg) []byte {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-release:
			return []byte(fmt.Sprintf(`{"stream":"AGENT_INPUT","seq":%d}`, stored.Add(1)))
		default:
			held = append(held, m)
			return nil
		}
	})
	// Two stores wait; the third stalls and fails.
	for i := range 2 {
		if err := nc.PublishRequest(fmt.Sprintf("agent.ask.default.s%d", i), nc.NewRespInbox(), []byte("hello")); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if got := ask(t, nc, "s2", 10*time.Second); !strings.Contains(got, "2 relayed messages wait for the input stream's acknowledgement") {
		t.Fatalf("the ask past the bound answered %q", got)
	}
	if d := time.Since(start); d < relayStall {
		t.Errorf("the ask past the bound failed after %v, before its stall of %v", d, relayStall)
	}
	// Settle the two held stores as the stream would; the next ask is
	// stored without failing.
	close(release)
	mu.Lock()
	for _, m := range held {
		_ = m.Respond([]byte(fmt.Sprintf(`{"stream":"AGENT_INPUT","seq":%d}`, stored.Add(1))))
	}
	mu.Unlock()
	bustest.Eventually(t, "the held stores to be settled", in.relays.settled(false))
	if got := ask(t, nc, "s3", 300*time.Millisecond); got != "" {
		t.Fatalf("a stored ask answered %q", got)
	}
	bustest.Eventually(t, "the last store to be settled", in.relays.settled(false))
	if n := stored.Load(); n != 3 {
		t.Fatalf("%d stores acknowledged, want 3", n)
	}
}

// TestRelayHostileAnswers publishes on the input's acknowledgement inbox
// what a peer that learned it could: tokens that are no id, ids never
// given, garbage for an id that waits, and answers repeated after the store
// was settled. Nothing crashes; a token that is no id or an unknown id is
// ignored; a store answered with garbage is refused with an error that
// quotes it (it may not have been stored), and its own late answer changes
// nothing.
func TestRelayHostileAnswers(t *testing.T) {
	held := make(chan *nats.Msg, 4)
	in, nc := relayRig(t, time.Minute, 0, func(m *nats.Msg) []byte {
		held <- m
		return nil
	})
	answered := make(chan string, 1)
	go func() { answered <- ask(t, nc, "s1", 10*time.Second) }()
	var store *nats.Msg
	select {
	case store = <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the ask was not relayed")
	}
	for _, subject := range []string{in.relays.prefix + "not-base36!", in.relays.prefix + "zzzzzzzzzzzzzzzzzz", in.relays.prefix + "999"} {
		if err := nc.Publish(subject, []byte(`{"stream":"AGENT_INPUT","seq":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	// The inbox's subscription reads its messages in order: had one of
	// those settled the store, the garbage below would find nothing
	// waiting, and the ask would go unanswered.
	if err := nc.Publish(store.Reply, []byte(`<html>`)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-answered:
		if !strings.Contains(got, "could not be stored") || !strings.Contains(got, `"<html>"`) {
			t.Fatalf("the ask answered %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a garbage answer left the ask unanswered")
	}
	_ = store.Respond([]byte(`{"stream":"AGENT_INPUT","seq":1}`))
	_ = store.Respond([]byte(`{"stream":"AGENT_INPUT","seq":1}`))
	bustest.Eventually(t, "the relay to settle", in.relays.settled(false))
}
