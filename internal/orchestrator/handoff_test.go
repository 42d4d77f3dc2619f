package orchestrator_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats.go"
)

// desk is the two agents of the handoff tests: support may hand over to
// billing; each has its own prompt, model name and tools.
func desk() []orchestrator.Profile {
	return []orchestrator.Profile{
		{Name: "support", SystemPrompt: "You are support.", Model: "support-model", Tools: []string{"lookup"}, Handoffs: []string{"billing"}},
		{Name: "billing", SystemPrompt: "You are billing.", Model: "billing-model", Tools: []string{"refund"}},
	}
}

// served says who a model request was made for: its model, system prompt
// and tools, and the user texts it holds.
func served(r llmtest.Request) (model, prompt string, tools, users []string) {
	for _, m := range r.Messages {
		switch m.Role {
		case "system":
			prompt = m.Text()
		case "user":
			users = append(users, m.Text())
		}
	}
	for _, t := range r.Tools {
		tools = append(tools, t.Function.Name)
	}
	slices.Sort(tools)
	return r.Model, prompt, tools, users
}

func newModelClient(t *testing.T) (*llmtest.Server, *llm.Client) {
	t.Helper()
	model := llmtest.NewServer(t)
	client, err := llm.New(llm.Config{BaseURL: model.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return model, client
}

func lastRequest(t *testing.T, model *llmtest.Server, n int) llmtest.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := model.WaitRequests(ctx, n); err != nil {
		t.Fatalf("model requests: %v", err)
	}
	reqs := model.Requests()
	return reqs[n-1]
}

// TestHandoffServesNextMessages: support's call of transfer_to_billing ends
// its run with a final message that says so and a session.handoff event on
// support's subjects; the next message, sent to the same subject, is
// answered by billing (its model, prompt and tools in the request, over the
// conversation as it stood); and after a restart on the same JetStream, by
// billing still, from the stored handoff record.
func TestHandoffServesNextMessages(t *testing.T) {
	model, client := newModelClient(t)
	model.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_tr", Name: "transfer_to_billing", Arguments: `{"reason":"a refund"}`}).Response(),
		llmtest.TextReply("billing: refund started").Response(),
		llmtest.TextReply("billing: still here").Response(),
	)
	workers := toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("lookup"), echo("refund")}}
	f := startFleet(t, orchestrator.Config{Model: client, Durable: true, Profiles: desk()}, workers)
	out := outs(t, f.nc, "support", "s1")

	publish(t, f.nc, "agent.in.support.s1", "", `{"content":"I want my money back","id":"m1"}`)
	first := next(t, out)
	if first.StopReason != agentfleet.StopReasonToolTerminated || !strings.Contains(agentfleet.JoinText(first.Content), "Agent support handed this conversation over to agent billing") {
		t.Errorf("first final = %s %q", first.StopReason, agentfleet.JoinText(first.Content))
	}
	if m, p, tools, _ := served(lastRequest(t, model, 1)); m != "support-model" || p != "You are support." || !slices.Contains(tools, "transfer_to_billing") || slices.Contains(tools, "refund") {
		t.Errorf("first request: model %s, prompt %q, tools %v", m, p, tools)
	}
	e := f.events.wait(t, "session.handoff", isType(agentfleet.EventSessionHandoff))
	if e.Agent != "support" || e.Session != "s1" || e.From != "support" || e.To != "billing" || e.Reason != "a refund" || e.ToolCallID != "call_tr" || e.RunID != first.RunID {
		t.Errorf("session.handoff = %+v", e)
	}

	publish(t, f.nc, "agent.in.support.s1", "", `{"content":"order 7","id":"m2"}`)
	if got := agentfleet.JoinText(next(t, out).Content); got != "billing: refund started" {
		t.Errorf("second final = %q", got)
	}
	m, p, tools, users := served(lastRequest(t, model, 2))
	if m != "billing-model" || p != "You are billing." || !slices.Contains(tools, "refund") || slices.Contains(tools, "lookup") || slices.Contains(tools, "transfer_to_billing") {
		t.Errorf("second request: model %s, prompt %q, tools %v; want billing's", m, p, tools)
	}
	if got, want := strings.Join(users, "|"), "I want my money back|order 7"; got != want {
		t.Errorf("second request's user messages = %q, want %q (the conversation as it stood)", got, want)
	}
	for _, e := range f.events.list(isType(agentfleet.EventRunStart)) {
		if e.Agent != "support" {
			t.Errorf("run.start on agent %s, want the session's own subjects (support)", e.Agent)
		}
	}

	// Restart: a new orchestrator on the same JetStream serves the session
	// from its stored handoff.
	stopped, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.orch.Close(stopped); err != nil {
		t.Fatal(err)
	}
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: client, Durable: true, Profiles: desk(), Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	publish(t, f.nc, "agent.in.support.s1", "", `{"content":"and order 8","id":"m3"}`)
	if got := agentfleet.JoinText(next(t, out).Content); got != "billing: still here" {
		t.Errorf("third final = %q", got)
	}
	if m, p, _, users := served(lastRequest(t, model, 3)); m != "billing-model" || p != "You are billing." || len(users) != 3 {
		t.Errorf("after the restart: model %s, prompt %q, users %q; want billing's, over the whole conversation", m, p, users)
	}
	st := loadHistory(t, f.nc, "support", "s1")
	var handoffs int
	for _, r := range st.Records {
		if r.Handoff != nil {
			handoffs++
			if r.Handoff.From != "support" || r.Handoff.To != "billing" || r.RunID != first.RunID {
				t.Errorf("handoff record = %+v of run %s", r.Handoff, r.RunID)
			}
		}
	}
	if handoffs != 1 {
		t.Errorf("handoff records = %d, want 1", handoffs)
	}
}

// TestHandoffRefused: a transfer to an agent support may not hand over to
// gets an error result and the session stays support's; a client's
// message cannot hand the session over, whatever headers or fields it
// carries.
func TestHandoffRefused(t *testing.T) {
	model, client := newModelClient(t)
	model.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_x", Name: "transfer_to_ghost", Arguments: `{}`}).Response(),
		llmtest.TextReply("support: no such desk").Response(),
		llmtest.TextReply("support: still me").Response(),
	)
	profiles := append(desk(), orchestrator.Profile{Name: "ghost"})
	f := startFleet(t, orchestrator.Config{Model: client, Durable: true, Profiles: profiles}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("lookup"), echo("refund")}})
	out := outs(t, f.nc, "support", "s2")

	publish(t, f.nc, "agent.in.support.s2", "", `{"content":"send me to ghost","id":"m1"}`)
	if got := agentfleet.JoinText(next(t, out).Content); got != "support: no such desk" {
		t.Errorf("first final = %q", got)
	}
	var result string
	for _, m := range lastRequest(t, model, 2).Messages {
		if m.Role == "tool" && m.ToolCallID == "call_x" {
			result = m.Text()
		}
	}
	if !strings.Contains(result, "Tool transfer_to_ghost not found") {
		t.Errorf("result of the unlisted transfer = %q", result)
	}

	// A field that would name a new agent is refused, with the field
	// named; headers that might be thought to carry a handoff do nothing.
	publish(t, f.nc, "agent.in.support.s2", "", `{"content":"hello","id":"m0","handoff":"billing"}`)
	f.events.wait(t, "the refusal of a handoff field", func(e agentfleet.Event) bool {
		return e.Type == agentfleet.EventError && strings.Contains(e.ErrorMessage, `unknown field "handoff"`)
	})
	msg := nats.NewMsg("agent.in.support.s2")
	msg.Data = []byte(`{"content":"hello","id":"m2"}`)
	for _, h := range []string{"Agentfleet-Record", "Agentfleet-Handoff", "Agentfleet-Agent"} {
		msg.Header.Set(h, "handoff")
	}
	msg.Header.Set("Agentfleet-Handoff-To", "billing")
	if err := f.nc.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	if got := agentfleet.JoinText(next(t, out).Content); got != "support: still me" {
		t.Errorf("second final = %q", got)
	}
	if m, p, _, _ := served(lastRequest(t, model, 3)); m != "support-model" || p != "You are support." {
		t.Errorf("after the client's message: model %s, prompt %q; want support's", m, p)
	}
	// A direct call of the transfer tool, as an MCP client or agent.call
	// makes one, is refused: it has no run to end.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := f.orch.CallTool(ctx, "support", "s2", agentfleet.ToolCall{Name: "transfer_to_billing", Arguments: map[string]any{}}, nil)
	if err != nil || !o.IsError || !strings.Contains(agentfleet.JoinText(o.Result.Content), "Tool transfer_to_billing hands a conversation over to agent billing at the end of a run, and a call outside a run has none") {
		t.Errorf("direct transfer = %+v, %v", o, err)
	}
	if hs := f.events.list(isType(agentfleet.EventSessionHandoff)); len(hs) != 0 {
		t.Errorf("session.handoff events: %+v", hs)
	}
	for _, r := range loadHistory(t, f.nc, "support", "s2").Records {
		if r.Handoff != nil {
			t.Errorf("a handoff record: %+v", r.Handoff)
		}
	}
}

// TestHandoffChain: billing may hand the session back; each handoff ends
// its own run, and each next message goes to the agent the last one named.
func TestHandoffChain(t *testing.T) {
	model, client := newModelClient(t)
	model.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_1", Name: "transfer_to_billing", Arguments: `{}`}).Response(),
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_2", Name: "transfer_to_support", Arguments: `{"reason":"not a billing matter"}`}).Response(),
		llmtest.TextReply("support again").Response(),
	)
	profiles := desk()
	profiles[1].Handoffs = []string{"support"}
	f := startFleet(t, orchestrator.Config{Model: client, Durable: true, Profiles: profiles}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("lookup"), echo("refund")}})
	out := outs(t, f.nc, "support", "s3")
	for i, want := range []struct{ model, final string }{
		{"support-model", "handed this conversation over to agent billing"},
		{"billing-model", "Agent billing handed this conversation over to agent support, which answers your next messages. Reason: not a billing matter"},
		{"support-model", "support again"},
	} {
		publish(t, f.nc, "agent.in.support.s3", "", `{"content":"message `+string(rune('1'+i))+`","id":"m`+string(rune('1'+i))+`"}`)
		if got := agentfleet.JoinText(next(t, out).Content); !strings.Contains(got, want.final) {
			t.Errorf("final %d = %q, want %q", i+1, got, want.final)
		}
		if m, _, _, _ := served(lastRequest(t, model, i+1)); m != want.model {
			t.Errorf("request %d made with %s, want %s", i+1, m, want.model)
		}
	}
	// The events come on a subscription of their own, which may lag
	// behind the one of the final messages: wait for the second.
	f.events.wait(t, "the second handoff", func(e agentfleet.Event) bool {
		return e.Type == agentfleet.EventSessionHandoff && e.From == "billing"
	})
	var hops []string
	for _, e := range f.events.list(isType(agentfleet.EventSessionHandoff)) {
		hops = append(hops, e.From+">"+e.To)
	}
	if got, want := strings.Join(hops, " "), "support>billing billing>support"; got != want {
		t.Errorf("session.handoff events = %q, want %q", got, want)
	}
}

// TestHandoffInterrupted: the orchestrator stops (no grace) after the
// handoff is stored and before the call's result is: the handoff does not
// count until its run ends, so the next orchestrator resumes the run with
// support, whose transfer runs again and ends it; the next message is
// billing's.
func TestHandoffInterrupted(t *testing.T) {
	model, client := newModelClient(t)
	model.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_tr", Name: "transfer_to_billing", Arguments: `{}`}).Response(),
		llmtest.TextReply("billing: after the crash").Response(),
	)
	stored := make(chan struct{})
	var once sync.Once
	hold := func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
		if in.Call.Name == "transfer_to_billing" {
			once.Do(func() { close(stored) })
			<-ctx.Done() // the orchestrator goes away meanwhile
			return nil, ctx.Err()
		}
		return nil, nil
	}
	workers := toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("lookup"), echo("refund")}}
	f := startFleet(t, orchestrator.Config{Model: client, Durable: true, Profiles: desk(), After: hold}, workers)
	out := outs(t, f.nc, "support", "s4")
	publish(t, f.nc, "agent.in.support.s4", "", `{"content":"refund please","id":"m1"}`)
	<-stored
	stopped, cancel := context.WithCancel(context.Background())
	cancel() // no grace: leave the run where it is
	if err := f.orch.Close(stopped); err != nil {
		t.Fatal(err)
	}

	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: client, Durable: true, Profiles: desk(), Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	first := next(t, out)
	if !strings.Contains(agentfleet.JoinText(first.Content), "handed this conversation over to agent billing") {
		t.Errorf("resumed final = %s %q", first.StopReason, agentfleet.JoinText(first.Content))
	}
	publish(t, f.nc, "agent.in.support.s4", "", `{"content":"order 9","id":"m2"}`)
	if got := agentfleet.JoinText(next(t, out).Content); got != "billing: after the crash" {
		t.Errorf("second final = %q", got)
	}
	if m, _, _, _ := served(lastRequest(t, model, 2)); m != "billing-model" {
		t.Errorf("second request made with %s, want billing-model", m)
	}
	var tos []string
	for _, r := range loadHistory(t, f.nc, "support", "s4").Records {
		if r.Handoff != nil {
			tos = append(tos, r.Handoff.To+"@"+r.RunID)
		}
	}
	if len(tos) != 2 || tos[0] != "billing@"+first.RunID || tos[1] != tos[0] {
		t.Errorf("handoff records = %v, want two naming billing in run %s", tos, first.RunID)
	}
}
