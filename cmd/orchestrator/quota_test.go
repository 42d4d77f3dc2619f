package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/window"
	"github.com/nats-io/nats.go"
)

// endpointConfig writes an agents file with one endpoint at baseURL whose
// model "priced" has limits and a price, and the agents given as YAML.
func endpointConfig(t *testing.T, baseURL, limits, agents string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "agents.yaml")
	body := fmt.Sprintf(`endpoints:
  - name: test
    base_url: %s
    models:
      - name: priced
        limits: %s
        price: {input: 1.0, cached_input: 0.5, output: 2.0}
agents:
%s`, baseURL, limits, agents)
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestCostBudgetStopsAtTheRightCall: every response uses 1000 input
// tokens (400 of them cached) and 100 output tokens, priced 1.0, 0.5 and
// 2.0 dollars per million: (600 × 1.0 + 400 × 0.5 + 100 × 2.0) / 1e6 =
// 0.001 dollars a call. With max_cost_per_run 0.0025 the run makes three
// calls (0.001, 0.002, then 0.003 ≥ 0.0025) and stops before a fourth
// with stop reason budget; run.end, the reply and the metric carry 0.003.
func TestCostBudgetStopsAtTheRightCall(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	srv := llmtest.NewServer(t)
	usage := &llmtest.Usage{PromptTokens: 1000, CompletionTokens: 100, TotalTokens: 1100, PromptTokensDetails: &llmtest.PromptTokensDetails{CachedTokens: 400}}
	for i := range 5 {
		r := llmtest.ToolCallsReply(llmtest.ToolCall{Name: "echo", Arguments: fmt.Sprintf(`{"text":"step %d"}`, i)})
		r.Usage = usage
		srv.Enqueue(r.Response())
	}
	config := endpointConfig(t, srv.BaseURL(), "{rpm: 6000}", "  - name: spender\n    model: priced\n    max_cost_per_run: 0.0025\n")
	m := run(t, "--workers", "1", "--config", config)
	nc := connect(t, m)
	events, err := nc.SubscribeSync("agent.events.spender.s1.>")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	final := ask(t, nc, "agent.ask.spender.s1", "spend")
	if final.StopReason != agentfleet.StopReasonBudget {
		t.Fatalf("stop reason %s (%q), want budget", final.StopReason, agentfleet.JoinText(final.Content))
	}
	if got := srv.Count(); got != 3 {
		t.Errorf("model calls = %d, want 3", got)
	}
	if final.Usage == nil || math.Abs(final.Usage.Cost-0.003) > 1e-12 || final.Usage.CachedInputTokens != 1200 {
		t.Errorf("final usage %+v, want cost 0.003 and 1200 cached tokens", final.Usage)
	}
	var exceeded, end *agentfleet.Event
	for end == nil {
		msg, err := events.NextMsg(10e9)
		if err != nil {
			t.Fatal(err)
		}
		e := decodeEvent(t, msg)
		switch e.Type {
		case agentfleet.EventBudgetExceeded:
			exceeded = e
		case agentfleet.EventRunEnd:
			end = e
		}
	}
	if exceeded == nil || exceeded.Budget != window.BudgetCostPerRun || exceeded.LimitUSD != 0.0025 || math.Abs(exceeded.UsedUSD-0.003) > 1e-12 {
		t.Errorf("budget.exceeded %+v, want max_cost_per_run 0.003/0.0025", exceeded)
	}
	if end.Message == nil || end.Message.Usage == nil || math.Abs(end.Message.Usage.Cost-0.003) > 1e-12 {
		t.Errorf("run.end usage %+v, want cost 0.003", end.Message)
	}
	_, body := scrape(t, "http://"+m.HTTPAddr()+"/metrics")
	if !strings.Contains(body, `agentfleet_model_cost_usd_total{agent="spender",model="priced"} 0.003`) {
		t.Errorf("/metrics lacks the cost of spender on priced:\n%s", grepLines(body, "model_cost"))
	}
}

func decodeEvent(t *testing.T, msg *nats.Msg) *agentfleet.Event {
	t.Helper()
	var e agentfleet.Event
	if err := e.UnmarshalJSON(msg.Data); err != nil {
		t.Fatal(err)
	}
	return &e
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestBadEndpointConfig: bad values of the endpoints are refused at the
// start, naming the field.
func TestBadEndpointConfig(t *testing.T) {
	for _, tc := range []struct{ limits, agents, want string }{
		{"{rpm: -1}", "  - name: a\n    model: priced\n", "limit rpm -1 is negative"},
		{"{concurrent: -3}", "  - name: a\n    model: priced\n", "limit concurrent -3 is negative"},
		{"{rpm: 10}", "  - name: a\n    model: unknown\n", `model "unknown" is not served by any endpoint`},
	} {
		config := endpointConfig(t, "http://127.0.0.1:1/v1", tc.limits, tc.agents)
		m := NewMain()
		m.Stderr = new(strings.Builder)
		err := m.ParseFlags([]string{"--config", config, "--http", ""})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--config") {
			t.Errorf("%s %s: err = %v, want %q", tc.limits, tc.agents, err, tc.want)
		}
	}
	config := endpointConfig(t, "http://127.0.0.1:1/v1", "{rpm: 10}", "  - name: a\n")
	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--config", config, "--model", "nope", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--http", ""}); err != nil {
		t.Fatal(err)
	}
	err := m.Run(t.Context())
	m.Close()
	if err == nil || !strings.Contains(err.Error(), `--model "nope" is not served`) {
		t.Errorf("--model not served: err = %v", err)
	}
}
