package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// TestForkModel forks a session onto another model its agent's profile
// allows: the fork's runs ask for that model, with the agent's prompt,
// while the source's keep the agent's; a model the profile does not list
// is refused. After a restart with a profile that no longer lists it, the
// fork's runs go back to the agent's model.
func TestForkModel(t *testing.T) {
	model, client := newModelClient(t)
	model.Enqueue(llmtest.TextReply("one").Response(), llmtest.TextReply("two").Response(), llmtest.TextReply("three").Response(), llmtest.TextReply("four").Response())
	profile := orchestrator.Profile{Name: "default", SystemPrompt: "You are it.", Model: "m-a", ForkModels: []string{"m-b"}}
	f := startFleet(t, orchestrator.Config{Model: client, Durable: true, Profiles: []orchestrator.Profile{profile}}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("lookup")}})
	subjects, _ := bus.NewSubjects("")
	fork := func(body string) timetravel.Reply {
		t.Helper()
		m, err := f.nc.Request(timetravel.Subject(subjects, "default", "s1"), []byte(body), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep timetravel.Reply
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			t.Fatalf("fork reply %q: %v", m.Data, err)
		}
		return rep
	}
	out1, out2 := outs(t, f.nc, "default", "s1"), outs(t, f.nc, "default", "s2")
	publish(t, f.nc, "agent.in.default.s1", "", `{"content":"hello","id":"m1"}`)
	next(t, out1)
	if m, _, _, _ := served(lastRequest(t, model, 1)); m != "m-a" {
		t.Errorf("the source's run asked for model %q, want m-a", m)
	}
	if rep := fork(`{"new_session":"s2","model":"m-b"}`); rep.Error != "" || rep.Forked.Model != "m-b" {
		t.Fatalf("fork: %+v", rep)
	}
	if rep := fork(`{"new_session":"s3","model":"m-c"}`); !strings.Contains(rep.Error, `agent "default" may not be forked onto model "m-c": the models a fork of it may choose are m-b`) {
		t.Errorf("a fork onto m-c: %+v", rep)
	}
	publish(t, f.nc, "agent.in.default.s2", "", `{"content":"again","id":"m2"}`)
	if got := agentfleet.JoinText(next(t, out2).Content); got != "two" {
		t.Errorf("the fork's answer: %q", got)
	}
	if m, p, _, users := served(lastRequest(t, model, 2)); m != "m-b" || p != "You are it." || strings.Join(users, "|") != "hello|again" {
		t.Errorf("the fork's run: model %q, prompt %q, users %q; want m-b, the agent's prompt, the whole conversation", m, p, users)
	}
	publish(t, f.nc, "agent.in.default.s1", "", `{"content":"source","id":"m3"}`)
	next(t, out1)
	if m, _, _, _ := served(lastRequest(t, model, 3)); m != "m-a" {
		t.Errorf("the source's second run asked for model %q, want m-a", m)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.orch.Close(ctx); err != nil {
		t.Fatal(err)
	}
	profile.ForkModels = nil
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: client, Durable: true, Profiles: []orchestrator.Profile{profile}, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	publish(t, f.nc, "agent.in.default.s2", "", `{"content":"after","id":"m4"}`)
	if got := agentfleet.JoinText(next(t, out2).Content); got != "four" {
		t.Errorf("after the restart: %q", got)
	}
	if m, _, _, _ := served(lastRequest(t, model, 4)); m != "m-a" {
		t.Errorf("after the restart without fork_models, the fork's run asked for model %q, want the agent's m-a", m)
	}
}
