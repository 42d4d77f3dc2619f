package input_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPartitionMatchesServer stores input through the input stream's
// subject transform and checks that the server put every session in the
// partition that bus.Partition computes.
func TestPartitionMatchesServer(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	ctx := context.Background()
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(*input.Inbound) error { return nil }), nil, nil)
	if _, err := d.Input(ctx, in); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	want := map[string]bool{}
	for i := range 200 {
		agent, session := fmt.Sprintf("agent%d", i%3), fmt.Sprintf("session-%d", i)
		if _, err := js.Publish(ctx, "agent.in."+agent+"."+session, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("agent.in.%d.%s.%s", bus.Partition(agent, session), agent, session)] = true
	}
	st, _ := js.Stream(ctx, "AGENT_INPUT")
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	for subject := range info.State.Subjects {
		if !want[subject] {
			t.Errorf("stored under %s, which bus.Partition does not give", subject)
		}
		delete(want, subject)
	}
	for subject := range want {
		t.Errorf("nothing stored under %s", subject)
	}
}

// TestRelay sends an ask as a core request to a relaying input: it is
// stored under the relay subject of its session and answered by whoever
// consumes the session's partition; an unknown agent is refused before it
// is stored; a relayed message whose reply subject is a system subject is
// rejected without a reply there.
func TestRelay(t *testing.T) {
	ctx := context.Background()
	got := make(chan *input.Inbound, 4)
	rig := startRelaying(t, "r1", func(in *input.Inbound) error {
		got <- in
		in.Reply(&agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("owner says " + agentfleet.JoinText(in.Message.Content))}, StopReason: agentfleet.StopReasonStop})
		if err := in.Ack(ownership.Fence{Partition: bus.Partition(in.Agent, in.Session)}); err != nil {
			t.Error(err)
		}
		return nil
	}, func(in *input.Inbound) error {
		if in.Agent != "default" {
			return fmt.Errorf("unknown agent %q", in.Agent)
		}
		return nil
	})
	nc, js := rig.nc, rig.js
	req := nats.NewMsg("agent.ask.default.r1")
	req.Data = []byte("hello")
	req.Header.Set(nats.MsgIdHdr, "m-1")
	reply, err := nc.RequestMsg(req, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var a agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &a); err != nil || agentfleet.JoinText(a.Content) != "owner says hello" {
		t.Fatalf("reply %s (%v)", reply.Data, err)
	}
	m := <-got
	if m.Kind != bus.KindAsk || m.Message.ID != "m-1" || m.Subject != "agent.ask.default.r1" {
		t.Errorf("the owner got kind %q, id %q, subject %q", m.Kind, m.Message.ID, m.Subject)
	}

	reply, err = nc.Request("agent.ask.nobody.r1", []byte("hello"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(reply.Data), `unknown agent \"nobody\"`) {
		t.Errorf("ask to an unknown agent answered %s", reply.Data)
	}

	// A relayed message, forged, that would have the owner publish on the
	// JetStream API.
	api, _ := nc.SubscribeSync("$JS.API.STREAM.DELETE.>")
	errs, _ := nc.SubscribeSync("agent.events.default.r1.error")
	nc.Flush()
	forged := nats.NewMsg("agent.relay.default.r1")
	forged.Data = []byte("hello")
	forged.Header.Set(input.HeaderKind, bus.KindAsk)
	forged.Header.Set(input.HeaderReply, "$JS.API.STREAM.DELETE.AGENT_INPUT")
	if _, err := js.PublishMsg(ctx, forged); err != nil {
		t.Fatal(err)
	}
	e, err := errs.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal("no error event for a forged reply subject")
	}
	if !strings.Contains(string(e.Data), "reply subject refused") {
		t.Errorf("error event %s", e.Data)
	}
	if m, err := api.NextMsg(200 * time.Millisecond); err == nil {
		t.Errorf("the owner published on %s", m.Subject)
	}
}
