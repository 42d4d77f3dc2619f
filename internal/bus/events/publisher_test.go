package events_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busevents "github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/nats-io/nats.go"
)

// TestPublisherEmit checks that the events Emit publishes in a burst, from
// reused buffers, each arrive on their subject as MarshalJSON writes them.
func TestPublisherEmit(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	subjects, err := bus.NewSubjects("agent")
	if err != nil {
		t.Fatal(err)
	}
	sub := bustest.MustConnect(t, srv)
	msgs := make(chan *nats.Msg, 1024)
	if _, err := sub.ChanSubscribe(subjects.Events(), msgs); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	p := busevents.NewPublisher(bustest.MustConnect(t, srv), subjects, nil)

	var events []*agentfleet.Event
	for _, e := range benchEvents() {
		events = append(events, e)
	}
	for i := range 300 {
		e := *events[i%3]
		e.Seq = uint64(i)
		e.ToolCallID = "call_" + strconv.Itoa(i) + strings.Repeat("<\u2028", i%7)
		if i%50 == 0 {
			// Larger than the buffers the pool keeps.
			e.Delta = strings.Repeat("d", 70<<10)
		}
		if i == 7 {
			e.Agent, e.Session = "not a token", "a.b"
		}
		events = append(events, &e)
	}
	events = append(events, &agentfleet.Event{Type: agentfleet.EventToolEnd, Agent: "a", Session: "s", Time: time.Now()})
	for _, e := range events {
		p.Emit(e)
	}
	for i, e := range events {
		var m *nats.Msg
		select {
		case m = <-msgs:
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d did not arrive", i)
		}
		want, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Data, want) {
			t.Fatalf("event %d: got %s\nwant %s", i, m.Data, want)
		}
		agent, session := e.Agent, e.Session
		if !bus.ValidToken(agent) {
			agent = "_"
		}
		if !bus.ValidToken(session) {
			session = "_"
		}
		if wantSubj := subjects.Event(agent, session, string(e.Type)); m.Subject != wantSubj {
			t.Errorf("event %d on %s, want %s", i, m.Subject, wantSubj)
		}
	}
	if got := p.Published(); got != uint64(len(events)) {
		t.Errorf("Published() = %d, want %d", got, len(events))
	}
}
