package input_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/nats-io/nats.go"
)

// TestFirstInput relays asks to sessions of a partition and checks what
// their deliveries say of the session's other stored input (Inbound.First):
// the ask of a session with nothing else stored is First; a second ask while
// the first waits unacknowledged is refused by the stream's condition and
// stored again without it, so it arrives, after the first, not First; once
// everything is acknowledged, the next ask is First again. A client's own
// expectation headers prove nothing unless they are exactly the condition
// on the session's own input subjects.
func TestFirstInput(t *testing.T) {
	got := make(chan *input.Inbound, 8)
	rig := startRelaying(t, "f1", func(in *input.Inbound) error {
		got <- in
		return nil
	}, nil)
	nc, js, ctx := rig.nc, rig.js, context.Background()
	subjects, _ := bus.NewSubjects("")
	next := func(what string) *input.Inbound {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing delivered", what)
			return nil
		}
	}
	ask := func(text string) {
		t.Helper()
		if err := nc.PublishRequest("agent.ask.default.f1", nc.NewRespInbox(), []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	ack := func(m *input.Inbound) {
		t.Helper()
		if err := m.Ack(ownership.Fence{Partition: bus.Partition(m.Agent, m.Session)}); err != nil {
			t.Fatal(err)
		}
	}

	ask("one")
	one := next("the first ask")
	if !one.First || agentfleet.JoinText(one.Message.Content) != "one" {
		t.Errorf("the ask of a session with nothing stored: First %v, text %q", one.First, agentfleet.JoinText(one.Message.Content))
	}
	ask("two") // while one waits for its ack
	two := next("the second ask")
	if two.First || agentfleet.JoinText(two.Message.Content) != "two" || two.Seq <= one.Seq {
		t.Errorf("an ask while another waits: First %v, text %q, seq %d after %d", two.First, agentfleet.JoinText(two.Message.Content), two.Seq, one.Seq)
	}
	ack(one)
	ack(two)
	bustest.Eventually(t, "the stream emptied", func() bool {
		st, err := js.Stream(ctx, "AGENT_INPUT")
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	ask("three")
	three := next("the ask after every other was acknowledged")
	if !three.First {
		t.Error("an ask of a session whose input was all acknowledged is not First")
	}
	ack(three)

	// Hostile: a client publishes straight to the stream with expectation
	// headers of its own. On another session's subjects, on every subject,
	// or without the sequence, they prove nothing for this one. (The exact
	// condition, set by a client, is checked by the stream like the
	// relay's, and proves as much.)
	stored := subjects.StoredSession("default", "f1")
	for _, h := range []map[string]string{
		{"Nats-Expected-Last-Subject-Sequence": "0", "Nats-Expected-Last-Subject-Sequence-Subject": subjects.StoredSession("default", "other")},
		{"Nats-Expected-Last-Subject-Sequence": "0", "Nats-Expected-Last-Subject-Sequence-Subject": "agent.>"},
		{"Nats-Expected-Last-Subject-Sequence-Subject": stored},
	} {
		m := nats.NewMsg("agent.in.default.f1")
		m.Data = []byte(`{"content":"forged"}`)
		for k, v := range h {
			m.Header.Set(k, v)
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			continue // refused by the stream: nothing stored
		}
		if f := next("a forged condition"); f.First {
			t.Errorf("headers %v made a message First", h)
		} else {
			ack(f)
		}
	}
}
