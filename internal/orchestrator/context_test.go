package orchestrator_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// TestContextPolicyAndSessionBudget runs a durable session of a profile
// with a small context window and a session budget, through a real model
// client, NATS and JetStream: a tool result of 40 kB reaches the model
// shortened, with the marker, while the stored history keeps it whole and
// context.compacted goes out on NATS; after a restart the session's spent
// tokens are counted from its stored history, so the next run stops at the
// budget without a model call.
func TestContextPolicyAndSessionBudget(t *testing.T) {
	profiles, err := orchestrator.ParseProfiles([]byte(`
agents:
  - name: small
    context_window: 4000
    reserve_output: 500
    max_tokens_per_session: 200
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t)
	withUsage := func(r llmtest.Reply) llmtest.Response {
		r.Usage = &llmtest.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}
		return r.Response()
	}
	srv.Enqueue(withUsage(llmtest.ToolCallsReply(llmtest.ToolCall{Name: "dump", Arguments: `{}`})), withUsage(llmtest.TextReply("dumped")))
	client, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("0123456789", 4000)
	dump := tool("dump", true, func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
		return agentfleet.TextResult(big), nil
	})
	f := startFleet(t, orchestrator.Config{Model: client, Profiles: profiles, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{dump}})

	if final := f.ask(t, "small", "s", "dump it"); final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("first run: %s (%s)", final.StopReason, final.ErrorMessage)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	body := reqs[1].Body
	if len(body) > 4000*4 || !bytes.Contains(body, []byte("bytes of this tool result left out")) {
		t.Errorf("second request: %d bytes, marker found %v; want the result shortened to fit 4000 tokens", len(body), bytes.Contains(body, []byte("left out")))
	}
	c := f.events.wait(t, "context.compacted", isType(agentfleet.EventContextCompacted))
	if c.ShortenedResults != 1 || c.Reason != "window" || c.TokensAfter >= c.TokensBefore {
		t.Errorf("context.compacted %+v, want one result shortened", c)
	}
	st := loadHistory(t, f.nc, "small", "s")
	var stored string
	for _, m := range st.Messages() {
		if tr, ok := m.(*agentfleet.ToolResultMessage); ok {
			stored = agentfleet.JoinText(tr.Content)
		}
	}
	if stored != big {
		t.Errorf("stored tool result of %d bytes, want the whole %d", len(stored), len(big))
	}

	// A new orchestrator on the same JetStream: the session's 220 tokens
	// come back with its history.
	stopped, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.orch.Close(stopped); err != nil {
		t.Fatal(err)
	}
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: client, Profiles: profiles, Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	final := f.ask(t, "small", "s", "more")
	if final.StopReason != agentfleet.StopReasonBudget || !strings.Contains(final.ErrorMessage, "max_tokens_per_session") {
		t.Fatalf("after the restart: %s (%s), want budget max_tokens_per_session", final.StopReason, final.ErrorMessage)
	}
	if n := srv.Count(); n != 2 {
		t.Errorf("%d model requests, want no new one", n)
	}
	b := f.events.wait(t, "budget.exceeded", isType(agentfleet.EventBudgetExceeded))
	if b.Budget != "max_tokens_per_session" || b.Limit != 200 || b.Used != 220 {
		t.Errorf("budget.exceeded %+v", b)
	}
}
