package guarded

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/nats-io/nats.go"
)

// TestHandler sends requests to a guarded subject: one without a reply, and
// ones whose reply is outside inbox space (the JetStream API, a session's
// subject), get nothing; past the bound, a request gets the busy answer at
// once while the one in flight goes on; an answer comes as JSON on the
// request's reply.
func TestHandler(t *testing.T) {
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	type answer struct{ Text string }
	if _, err := nc.Subscribe("work", Handler(Config{
		Conn: nc, Logger: slog.New(slog.DiscardHandler), What: "job", MaxInFlight: 1,
		Busy: func(text string) any { return answer{Text: text} },
		Answer: func(m *nats.Msg) any {
			started <- struct{}{}
			<-release
			return answer{Text: "done " + string(m.Data)}
		},
	})); err != nil {
		t.Fatal(err)
	}
	// Hostile replies: nothing is published on them, nothing runs.
	forged, _ := nc.SubscribeSync("$JS.API.>")
	session, _ := nc.SubscribeSync("agent.in.default.s")
	for _, reply := range []string{"", "$JS.API.STREAM.DELETE.AGENT_INPUT", "agent.in.default.s"} {
		if err := nc.PublishMsg(&nats.Msg{Subject: "work", Reply: reply, Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	first := nc.NewRespInbox()
	replies, _ := nc.SubscribeSync(first)
	if err := nc.PublishRequest("work", first, []byte("one")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request with an inbox reply did not run")
	}
	busy, err := nc.Request("work", []byte("two"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var a answer
	if err := json.Unmarshal(busy.Data, &a); err != nil || a.Text != "busy: 1 jobs in flight, try again" {
		t.Errorf("past the bound: %s (%v)", busy.Data, err)
	}
	close(release)
	m, err := replies.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(m.Data, &a); err != nil || a.Text != "done one" {
		t.Errorf("answer: %s (%v)", m.Data, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []*nats.Subscription{forged, session} {
		if m, err := sub.NextMsg(0); err == nil {
			t.Errorf("published on a refused reply: %s %q", m.Subject, m.Data)
		}
	}
	if len(started) != 0 {
		t.Errorf("%d refused requests ran", len(started))
	}
}
