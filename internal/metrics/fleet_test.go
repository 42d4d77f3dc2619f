package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/metrics"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// TestFleetEndToEnd wires the metrics the way the commands do, into a real
// orchestrator and tool worker on an embedded NATS server, asks a question
// that makes two tool calls (one fails), and scrapes both /metrics.
func TestFleetEndToEnd(t *testing.T) {
	srv := bustest.MustRunNATS(t)

	// The worker: metrics first, the server's Observe is theirs, then the
	// gauges read the server.
	wm := metrics.NewWorker()
	tool := func(name string, h agentfleet.HandlerFunc) *agentfleet.Tool {
		return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Label: name, Description: "test tool " + name,
			InputSchema: json.RawMessage(`{"type":"object"}`), Parallel: true}, Handler: h}
	}
	ts, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{
		Concurrency: 4, Heartbeat: 100 * time.Millisecond, Observe: wm.Observe,
		Tools: []*agentfleet.Tool{
			tool("echo", func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
				return agentfleet.TextResult("echo"), nil
			}),
			tool("fail", func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
				return nil, errors.New("fail: always")
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Stop() })
	wm.SetCapacity(ts.InFlight, ts.Concurrency)
	ws := serve(t, wm.Registry(), nil)

	// The orchestrator: metrics are its Observer, its publisher reports to
	// them, and the sessions gauge reads it.
	om := metrics.NewOrchestrator()
	model := loop.ModelFunc(func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		start := time.Now()
		defer func() { om.LLMRequest(time.Since(start), nil, "") }()
		if _, ok := req.Messages[len(req.Messages)-1].(*agentfleet.ToolResultMessage); ok {
			onDelta("done")
			return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text("done")}, StopReason: agentfleet.StopReasonStop,
				Usage: &agentfleet.Usage{InputTokens: 40, OutputTokens: 2, TotalTokens: 42}}, nil
		}
		return &agentfleet.AssistantMessage{StopReason: agentfleet.StopReasonToolUse,
			Content: []agentfleet.Content{
				{Type: agentfleet.ContentToolCall, ID: "call_e2e_1", Name: "echo", Arguments: json.RawMessage(`{}`)},
				{Type: agentfleet.ContentToolCall, ID: "call_e2e_2", Name: "fail", Arguments: json.RawMessage(`{}`)},
			},
			Usage: &agentfleet.Usage{InputTokens: 30, OutputTokens: 7, TotalTokens: 37}}, nil
	})
	o, err := orchestrator.New(bustest.MustConnect(t, srv), orchestrator.Config{
		Model: model, Observer: om, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	o.Publisher().OnPublish = om.EventPublished
	om.SetSessions(o.Sessions)
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.Close(ctx); err != nil {
			t.Errorf("close orchestrator: %v", err)
		}
	})
	osrv := serve(t, om.Registry(), nil)

	obefore, wbefore := scrapeOf(t, osrv), scrapeOf(t, ws)
	nc := bustest.MustConnect(t, srv)
	reply, err := nc.Request("agent.ask.default.e2e-session-4242", []byte("go"), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var final agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &final); err != nil || final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("ask answered %s (%v)", reply.Data, err)
	}
	// An ask to an agent that does not exist is rejected, with an error event that the
	// publisher sends outside the loop.
	if _, err := nc.Request("agent.ask.nobody.e2e-session-4243", []byte("go"), 15*time.Second); err != nil {
		t.Fatal(err)
	}

	// The run's events were counted before its answer was sent; the
	// input outcome and the worker's count come just after their replies.
	var oafter, wafter *scrape
	bustest.Eventually(t, "input and worker counts", func() bool {
		oafter, wafter = scrapeOf(t, osrv), scrapeOf(t, ws)
		in, _ := oafter.value("agentfleet_input_messages_total", "outcome=rejected")
		calls, _ := wafter.value("agentfleet_worker_calls_total", "tool=fail", "outcome=error")
		return in == 1 && calls == 1
	})
	checkDeltas(t, obefore, oafter, []delta{
		{"agentfleet_runs_started_total", nil, 1},
		{"agentfleet_runs_ended_total", []string{"stop_reason=stop"}, 1},
		{"agentfleet_runs_active", nil, 0},
		{"agentfleet_turns_total", nil, 2},
		{"agentfleet_sessions", nil, 1},
		{"agentfleet_llm_attempts_total", nil, 2},
		{"agentfleet_llm_tokens_total", []string{"kind=input"}, 70},
		{"agentfleet_llm_tokens_total", []string{"kind=output"}, 9},
		{"agentfleet_tool_call_duration_seconds_count", []string{"tool=echo", "outcome=ok"}, 1},
		{"agentfleet_tool_call_duration_seconds_count", []string{"tool=fail", "outcome=error"}, 1},
		{"agentfleet_tool_attempts_total", []string{"tool=echo", "outcome=ok"}, 1},
		{"agentfleet_tool_attempts_total", []string{"tool=fail", "outcome=error"}, 1},
		{"agentfleet_tool_calls_in_flight", nil, 0},
		{"agentfleet_input_messages_total", []string{"outcome=accepted"}, 1},
		{"agentfleet_input_messages_total", []string{"outcome=rejected"}, 1},
		{"agentfleet_events_published_total", []string{"type=run.start"}, 1},
		{"agentfleet_events_published_total", []string{"type=tool.end"}, 2},
		{"agentfleet_events_published_total", []string{"type=error"}, 1},
	})
	checkDeltas(t, wbefore, wafter, []delta{
		{"agentfleet_worker_calls_total", []string{"tool=echo", "outcome=ok"}, 1},
		{"agentfleet_worker_calls_total", []string{"tool=fail", "outcome=error"}, 1},
		{"agentfleet_worker_call_duration_seconds_count", []string{"tool=echo"}, 1},
		{"agentfleet_worker_calls_in_flight", nil, 0},
	})
	if v := wafter.must(t, "agentfleet_worker_concurrency_limit"); v != 4 {
		t.Errorf("worker concurrency limit = %v, want 4", v)
	}
	for _, s := range []*scrape{oafter, wafter} {
		for _, id := range []string{"e2e-session", "call_e2e", final.RunID} {
			if id != "" && strings.Contains(s.text, id) {
				t.Errorf("the scrape holds the id %q", id)
			}
		}
	}
}
