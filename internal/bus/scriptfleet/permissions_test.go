package scriptfleet_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// TestCallToolFailsClosed: a scripted tool's call_tool reaches only the
// tools of the allowed list its call request carries, and no tool at all
// when the request carries none, whoever sent it: the orchestrator's
// pipeline, a tool client, or a raw NATS request.
func TestCallToolFailsClosed(t *testing.T) {
	ctx := testContext(t)
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	var reached atomic.Int64
	secret, err := toolrpc.Serve(bustest.MustConnect(t, s), toolrpc.ServerConfig{Logger: quietLog, Tools: []*agentfleet.Tool{{
		ToolDef: agentfleet.ToolDef{Name: "secret", Description: "only some agents"},
		Handler: agentfleet.HandlerFunc(func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
			reached.Add(1)
			return agentfleet.TextResult("the secret"), nil
		}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { secret.Stop() })
	store, err := scriptfleet.NewStore(ctx, nc, scriptfleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	anyObject := json.RawMessage(`{"type":"object"}`)
	rev, err := store.Put(ctx, &script.Definition{Name: "peek", Description: "peek", InputSchema: anyObject,
		Code: "def execute(args):\n    return call_tool('secret', {}, full=True)['text']\n"})
	if err != nil {
		t.Fatal(err)
	}
	startScriptWorker(t, s, script.Env{}).await(t, map[string]uint64{"peek": rev})
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	const (
		noList    = `call_tool: tool secret is not allowed: the call request of this scripted tool carried no allowed list (field "allowed": the tools of the calling agent), so call_tool reaches no tool`
		notListed = "call_tool: tool secret is not allowed for agent agent-a"
	)
	// viaClient calls peek as a tool client does; nil and empty lists
	// travel alike (the field is left out).
	viaClient := func(allowed []string) func(t *testing.T) string {
		return func(t *testing.T) string {
			res, err := fleetexec.Executor{Client: client}.Execute(ctx, &pipeline.Prepared{
				Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "peek", Scripted: true}},
				Call: agentfleet.ToolCall{ID: "call_peek", Name: "peek"}, Timeout: 10 * time.Second,
				Agent: "agent-a", Allowed: allowed,
			}, func(any) {})
			if err != nil {
				t.Fatal(err)
			}
			return agentfleet.JoinText(res.Content)
		}
	}
	// viaPipeline calls peek as the orchestrator does, for an agent whose
	// store holds the tools given: the pipeline sends the store's names.
	viaPipeline := func(names ...string) func(t *testing.T) string {
		return func(t *testing.T) string {
			agentTools := tools.NewStore("agent-a")
			for _, n := range names {
				if err := agentTools.Register(&agentfleet.Tool{ToolDef: agentfleet.ToolDef{
					Name: n, Description: n, InputSchema: anyObject, Scripted: n == "peek",
				}}); err != nil {
					t.Fatal(err)
				}
			}
			p := pipeline.New(pipeline.Config{Executor: fleetexec.Executor{Client: client}, Agent: "agent-a", Session: "s", RunID: "r"})
			b := p.Run(ctx, &pipeline.Context{Tools: agentTools}, &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant},
				[]agentfleet.ToolCall{{ID: "call_peek", Name: "peek", Arguments: map[string]any{}}})
			if o := b.Outcomes[0]; o.IsError {
				t.Fatalf("peek failed: %s", agentfleet.JoinText(o.Result.Content))
			}
			return agentfleet.JoinText(b.Outcomes[0].Result.Content)
		}
	}
	// viaRawRequest sends a call request without an allowed list straight
	// to the tool's subject, as any NATS client may.
	viaRawRequest := func(t *testing.T) string {
		req, err := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "raw", Tool: "peek", Args: map[string]any{}, TimeoutMS: 10000, Agent: "agent-a"})
		if err != nil {
			t.Fatal(err)
		}
		inbox := nc.NewRespInbox()
		frames, err := nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		defer frames.Unsubscribe()
		subjects, _ := bus.NewSubjects("")
		if err := nc.PublishRequest(subjects.Tool("peek"), inbox, req); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := frames.NextMsg(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			f, err := wire.DecodeFrame(m.Data)
			if err != nil {
				t.Fatal(err)
			}
			switch f.T {
			case wire.FrameResult:
				return agentfleet.JoinText(f.Result.Content)
			case wire.FrameError, wire.FrameBusy:
				t.Fatalf("frame %+v", f)
			}
		}
	}
	tests := []struct {
		name  string
		run   func(t *testing.T) string
		want  string
		calls int64 // the calls that reach secret
	}{
		{"client/no list", viaClient(nil), noList, 0},
		{"client/empty list", viaClient([]string{}), noList, 0},
		{"raw request/no list", viaRawRequest, noList, 0},
		{"client/listed", viaClient([]string{"peek", "secret"}), "the secret", 1},
		{"client/not listed", viaClient([]string{"peek"}), notListed, 0},
		{"pipeline/listed", viaPipeline("peek", "secret"), "the secret", 1},
		{"pipeline/not listed", viaPipeline("peek"), notListed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := reached.Load()
			if got := tt.run(t); !strings.Contains(got, tt.want) {
				t.Errorf("peek = %q, want %q", got, tt.want)
			}
			if got := reached.Load() - before; got != tt.calls {
				t.Errorf("secret ran %d times, want %d", got, tt.calls)
			}
		})
	}
}
