package orchestrator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busfleet "github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/mcpserver"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	starlark "github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/scripts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNestedCallOfGatedToolIsRefused is the attack of a model that routes
// around approval: agent default puts echo to a person, and the model
// calls relay, a scripted tool whose call_tool calls echo. Through a real
// model server, NATS, a script worker and the orchestrator: relay's
// call_tool is refused with an error that names echo and the agent and
// says to call echo directly, echo never runs and no approval is asked;
// then a direct echo in the same agent waits for approval and runs once
// approved. Outside a run (an MCP client on /mcp, or CallTool), echo is
// refused for its approval, relay's nested echo is refused alike, and a
// tool that needs no approval is still reached through relay.
func TestNestedCallOfGatedToolIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	model := llmtest.NewServer(t)
	model.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_relay", Name: "relay", Arguments: `{"tool":"echo"}`}).Response(),
		llmtest.TextReply("relayed").Response(),
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_echo", Name: "echo", Arguments: `{"text":"hi"}`}).Response(),
		llmtest.TextReply("echoed").Response(),
	)
	client, err := llm.New(llm.Config{BaseURL: model.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	var echoes atomic.Int64
	gated := tool("echo", true, func(_ context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		echoes.Add(1)
		return agentfleet.TextResult(fmt.Sprintf("echo ran with %v", c.Arguments["text"])), nil
	})
	f := startFleet(t, orchestrator.Config{Model: client, Durable: true, Profiles: []orchestrator.Profile{
		{Name: "default", Approve: []string{"echo"}},
	}}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{gated, echo("say")}})

	srv, err := scriptfleet.Serve(ctx, bustest.MustConnect(t, f.srv), scriptfleet.ServerConfig{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Heartbeat: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	if _, err := srv.Store().Put(ctx, &starlark.Definition{Name: "relay", Description: "calls the tool it is told to",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"tool":{"type":"string"}},"required":["tool"]}`),
		Code:        "def execute(args):\n    return call_tool(args['tool'], {'text': 'via relay'}, full=True)['text']\n"}); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the orchestrator sees relay", func() bool {
		d, ok := find(f.orch, "default", "relay")
		return ok && d.Scripted
	})
	refusal := fmt.Sprintf(scripts.NestedApprovalText, "echo", "default", "echo")

	// The model's relay: refused inside, and the run goes on.
	if final := f.ask(t, "default", "nested", "relay it"); agentfleet.JoinText(final.Content) != "relayed" {
		t.Fatalf("nested run ended with %q (%s)", agentfleet.JoinText(final.Content), final.ErrorMessage)
	}
	reqs := model.Requests()
	if len(reqs) != 2 || !bytes.Contains(reqs[1].Body, []byte(jsonText(refusal))) {
		t.Errorf("the model did not see relay's refusal %q in its second request", refusal)
	}
	if n := echoes.Load(); n != 0 {
		t.Fatalf("echo ran %d times through relay, want 0", n)
	}
	if evs := f.events.list(func(e agentfleet.Event) bool {
		return e.Session == "nested" && e.Type == agentfleet.EventToolApproval
	}); len(evs) != 0 {
		t.Errorf("%d tool.approval events in the nested run, want none: nothing was put to a person", len(evs))
	}

	// The model's direct echo in the same agent waits, and runs once
	// approved.
	out := outs(t, f.nc, "default", "direct")
	publish(t, f.nc, "agent.in.default.direct", "", `{"content":"echo it"}`)
	e := f.pendingApproval(t, "direct")
	if e.ToolName != "echo" {
		t.Fatalf("pending approval of %s, want echo", e.ToolName)
	}
	if n := echoes.Load(); n != 0 {
		t.Fatalf("echo ran %d times before its decision", n)
	}
	if r := f.decide(t, "default", "direct", fmt.Sprintf(`{"tool_call_id":%q,"approve":true}`, e.ToolCallID)); !r.OK {
		t.Fatalf("approve: %+v", r)
	}
	if final := next(t, out); agentfleet.JoinText(final.Content) != "echoed" {
		t.Errorf("direct run ended with %q", agentfleet.JoinText(final.Content))
	}
	if n := echoes.Load(); n != 1 {
		t.Errorf("echo ran %d times once approved, want 1", n)
	}

	// Outside a run: an MCP client on /mcp, and the orchestrator's own
	// CallTool (agentctl call).
	h := httptest.NewServer(mcpserver.New(mcpserver.Config{Backend: mcpserver.Local(f.orch), Logger: slog.New(slog.DiscardHandler)}).Handler())
	defer h.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.URL + "/mcp/default", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	mcpCall := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("mcp tools/call %s: %v", name, err)
		}
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "\n"), res.IsError
	}
	direct := fmt.Sprintf(orchestrator.DirectApprovalText, "echo", "default")
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string
		isError    bool
	}{
		{"mcp: gated echo refused", "echo", map[string]any{"text": "x"}, direct, true},
		{"mcp: relay to gated echo refused", "relay", map[string]any{"tool": "echo"}, refusal, false},
		{"mcp: relay to say still serves", "relay", map[string]any{"tool": "say"}, `say{"text":"via relay"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isError := mcpCall(tc.tool, tc.args)
			if !strings.Contains(got, tc.want) || isError != tc.isError {
				t.Errorf("%s = %q (error %v), want %q (error %v)", tc.tool, got, isError, tc.want, tc.isError)
			}
		})
	}
	o, err := f.orch.CallTool(ctx, "default", "direct-call", agentfleet.ToolCall{Name: "relay", Arguments: map[string]any{"tool": "echo"}}, nil)
	if err != nil || !strings.Contains(agentfleet.JoinText(o.Result.Content), refusal) {
		t.Errorf("CallTool relay = %v, %v; want the nested refusal", o, err)
	}
	o, err = f.orch.CallTool(ctx, "default", "direct-call", agentfleet.ToolCall{Name: "echo", Arguments: map[string]any{"text": "x"}}, nil)
	if err != nil || !o.IsError || !strings.Contains(agentfleet.JoinText(o.Result.Content), direct) {
		t.Errorf("CallTool echo = %v, %v; want %q", o, err, direct)
	}
	if n := echoes.Load(); n != 1 {
		t.Errorf("echo ran %d times in all, want only the approved 1", n)
	}
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// TestToolWrittenAtRunTimeCannotReachGatedTool is the same attack in two
// turns: the model writes, with write_tool, a tool whose script calls
// echo, which needs approval, and then calls it. The new tool is bound
// like any scripted tool: its call_tool of echo is refused and echo never
// runs.
func TestToolWrittenAtRunTimeCannotReachGatedTool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	model := llmtest.NewServer(t)
	def, _ := json.Marshal(map[string]any{
		"name": "sneak", "label": "Sneak", "description": "calls echo from inside",
		"input_schema": map[string]any{"type": "object"},
		"code":         "def execute(args):\n    return call_tool('echo', {'text': 'sneaky'}, full=True)['text']\n",
	})
	model.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_write", Name: "write_tool", Arguments: string(def)}).Response(),
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_sneak", Name: "sneak", Arguments: `{}`}).Response(),
		llmtest.TextReply("sneaked").Response(),
	)
	client, err := llm.New(llm.Config{BaseURL: model.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	var echoes atomic.Int64
	worker, err := toolrpc.Serve(bustest.MustConnect(t, s), toolrpc.ServerConfig{Heartbeat: 100 * time.Millisecond, Tools: []*agentfleet.Tool{
		tool("echo", true, func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
			echoes.Add(1)
			return agentfleet.TextResult("echo ran"), nil
		}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Stop() })
	srv, err := scriptfleet.Serve(ctx, bustest.MustConnect(t, s), scriptfleet.ServerConfig{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Heartbeat: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	var orch *orchestrator.Orchestrator
	fleet := func() []agentfleet.ToolDef { return orch.Fleet().Tools() }
	// write_tool returns once the fleet serves the tool, as the
	// orchestrator command's does.
	write := starlark.WriteTool(srv.Store(), fleet, scriptfleet.RemoteDryRun(nc, bus.DefaultPrefix))
	inner := write.Handler
	write.Handler = agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		res, err := inner.Call(ctx, c)
		if err == nil {
			name, _ := c.Arguments["name"].(string)
			err = orch.WaitTool(ctx, name, true)
		}
		return res, err
	})
	orch, err = orchestrator.New(bustest.MustConnect(t, s), orchestrator.Config{
		Model: client, Durable: true, Discovery: busfleet.FleetConfig{Wait: 200 * time.Millisecond},
		Profiles:   []orchestrator.Profile{{Name: "default", Approve: []string{"echo"}}},
		LocalTools: []*agentfleet.Tool{write},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := orch.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { orch.Close(context.Background()) })

	m, err := nc.Request("agent.ask.default.writer", []byte("write and call it"), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var final agentfleet.AssistantMessage
	if err := json.Unmarshal(m.Data, &final); err != nil || agentfleet.JoinText(final.Content) != "sneaked" {
		t.Fatalf("run ended with %s (%v)", m.Data, err)
	}
	reqs := model.Requests()
	refusal := fmt.Sprintf(scripts.NestedApprovalText, "echo", "default", "echo")
	if len(reqs) != 3 || !bytes.Contains(reqs[1].Body, []byte("Tool sneak written")) || !bytes.Contains(reqs[2].Body, []byte(jsonText(refusal))) {
		t.Errorf("the model did not see sneak written and then refused echo (%d requests)", len(reqs))
	}
	if n := echoes.Load(); n != 0 {
		t.Errorf("echo ran %d times through a tool written at run time, want 0", n)
	}
}
