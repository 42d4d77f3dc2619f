package scriptfleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/approval"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/scripts"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// TestNestedCallOfGatedToolRefused: a tool whose calls need a person's
// decision is never reached through call_tool, whether the script runs in
// the worker's process or in a child, is called by the pipeline or by
// another script, names the tool by a glob or the callee is gated for
// being destructive; the refusal names the tool and the agent and says to
// call it directly. After each refusal the worker serves on, and tools
// that need no decision are still reached.
func TestNestedCallOfGatedToolRefused(t *testing.T) {
	for _, isolation := range []string{scripts.IsolationNone, scripts.IsolationProcess} {
		name := "in process"
		if isolation == scripts.IsolationProcess {
			name = "isolated child"
		}
		t.Run(name, func(t *testing.T) { testNestedCallOfGatedTool(t, isolation) })
	}
}

func testNestedCallOfGatedTool(t *testing.T, isolation string) {
	ctx := testContext(t)
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	var echoed, wiped atomic.Int64
	plain, err := toolrpc.Serve(bustest.MustConnect(t, s), toolrpc.ServerConfig{Logger: quietLog, Tools: []*agentfleet.Tool{{
		ToolDef: agentfleet.ToolDef{Name: "echo", Description: "echo"},
		Handler: agentfleet.HandlerFunc(func(_ context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			echoed.Add(1)
			return agentfleet.TextResult("echo ran"), nil
		}),
	}, {
		ToolDef: agentfleet.ToolDef{Name: "wipe", Description: "wipe", Annotations: agentfleet.Annotations{Destructive: true}},
		Handler: agentfleet.HandlerFunc(func(_ context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			wiped.Add(1)
			return agentfleet.TextResult("wipe ran"), nil
		}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Stop() })
	anyObject := json.RawMessage(`{"type":"object"}`)
	changes := make(chan map[string]uint64, 16)
	// A heartbeat of 1 s: a nested call spawns two script processes, and
	// under the race detector on a loaded machine three missed beats of
	// 100 ms took the worker for lost.
	cfg := scriptfleet.ServerConfig{Logger: quietLog, Heartbeat: time.Second, Isolation: isolation,
		OnChange: func(served map[string]uint64) { changes <- served }}
	if isolation == scripts.IsolationProcess {
		cfg.ChildAddressSpace = 512 << 20
	}
	srv, err := scriptfleet.Serve(ctx, bustest.MustConnect(t, s), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	served := map[string]uint64{}
	for name, code := range map[string]string{
		"relay":      "def execute(args):\n    return call_tool(args['tool'], {}, full=True)['text']\n",
		"relay_more": "def execute(args):\n    return call_tool('relay', {'tool': args['tool']}, full=True)['text']\n",
	} {
		rev, err := srv.Store().Put(ctx, &script.Definition{Name: name, Description: name, InputSchema: anyObject, Code: code})
		if err != nil {
			t.Fatal(err)
		}
		served[name] = rev
	}
	(&scriptWorker{srv: srv, changes: changes}).await(t, served)
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	// The agent's tools, as the orchestrator's store holds them.
	agentTools := tools.NewStore("agent-a")
	for _, d := range []agentfleet.ToolDef{
		{Name: "echo", Description: "echo", InputSchema: anyObject},
		{Name: "wipe", Description: "wipe", InputSchema: anyObject, Annotations: agentfleet.Annotations{Destructive: true}},
		{Name: "relay", Description: "relay", InputSchema: anyObject, Scripted: true},
		{Name: "relay_more", Description: "relay more", InputSchema: anyObject, Scripted: true},
	} {
		if err := agentTools.Register(&agentfleet.Tool{ToolDef: d}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(t *testing.T, pol approval.Policy, tool, target string) string {
		t.Helper()
		p := pipeline.New(pipeline.Config{Executor: fleetexec.Executor{Client: client}, Agent: "agent-a", Session: "s", RunID: "r", Nested: pol.Nested})
		b := p.Run(ctx, &pipeline.Context{Tools: agentTools}, &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant},
			[]agentfleet.ToolCall{{ID: "call_" + tool, Name: tool, Arguments: map[string]any{"tool": target}}})
		if o := b.Outcomes[0]; o.IsError {
			t.Fatalf("%s failed: %s", tool, agentfleet.JoinText(o.Result.Content))
		}
		return agentfleet.JoinText(b.Outcomes[0].Result.Content)
	}
	refusal := func(tool string) string { return fmt.Sprintf(scripts.NestedApprovalText, tool, "agent-a", tool) }
	tests := []struct {
		name         string
		pol          approval.Policy
		tool, target string
		want         string
		echo, wipe   int64 // the calls that reach echo and wipe
	}{
		{"no policy reaches echo", approval.Policy{}, "relay", "echo", "echo ran", 1, 0},
		{"relay to gated echo", approval.Policy{Tools: []string{"echo"}}, "relay", "echo", refusal("echo"), 0, 0},
		{"glob gates echo", approval.Policy{Tools: []string{"e*"}}, "relay", "echo", refusal("echo"), 0, 0},
		{"script calling a script calling gated echo", approval.Policy{Tools: []string{"echo"}}, "relay_more", "echo", refusal("echo"), 0, 0},
		{"destructive callee", approval.Policy{Destructive: true}, "relay", "wipe", refusal("wipe"), 0, 0},
		{"destructive policy leaves echo reachable", approval.Policy{Destructive: true}, "relay_more", "echo", "echo ran", 1, 0},
		{"gated relay not reachable from another script", approval.Policy{Tools: []string{"relay"}}, "relay_more", "echo", refusal("relay"), 0, 0},
		{"other case is another tool", approval.Policy{Tools: []string{"echo"}}, "relay", "ECHO", "call_tool: tool ECHO is not allowed for agent agent-a", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, w := echoed.Load(), wiped.Load()
			if got := run(t, tt.pol, tt.tool, tt.target); !strings.Contains(got, tt.want) {
				t.Errorf("%s(%s) = %q, want %q", tt.tool, tt.target, got, tt.want)
			}
			if got := echoed.Load() - e; got != tt.echo {
				t.Errorf("echo ran %d times, want %d", got, tt.echo)
			}
			if got := wiped.Load() - w; got != tt.wipe {
				t.Errorf("wipe ran %d times, want %d", got, tt.wipe)
			}
		})
	}
}
