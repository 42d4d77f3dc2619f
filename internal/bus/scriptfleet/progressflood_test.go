package scriptfleet_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/scripts"
)

// TestProgressFloodOfIsolatedScript: a script in an isolated child that
// floods its progress (1000 values of 200 kB) passes on at most its call's
// bound of progress bytes, and the call ends with its result.
func TestProgressFloodOfIsolatedScript(t *testing.T) {
	ctx := testContext(t)
	s := bustest.MustRunNATS(t)
	changes := make(chan map[string]uint64, 16)
	const limit = 300_000
	srv, err := scriptfleet.Serve(ctx, bustest.MustConnect(t, s), scriptfleet.ServerConfig{
		Logger: quietLog, Heartbeat: time.Second, Isolation: scripts.IsolationProcess, ChildAddressSpace: 512 << 20,
		Env:      script.Env{Timeout: 30 * time.Second, MaxProgressBytes: limit},
		OnChange: func(served map[string]uint64) { changes <- served },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	rev, err := srv.Store().Put(ctx, &script.Definition{Name: "flood", Description: "floods its progress", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: "def execute(args):\n    chunk = 'p' * 200000\n    for i in range(1000):\n        progress({'i': i, 'chunk': chunk})\n    return 'flooded'\n"})
	if err != nil {
		t.Fatal(err)
	}
	(&scriptWorker{srv: srv, changes: changes}).await(t, map[string]uint64{"flood": rev})
	client, err := toolrpc.NewToolClient(bustest.MustConnect(t, s), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	var mu sync.Mutex
	var n, total int
	res, err := fleetexec.Executor{Client: client}.Execute(ctx, &pipeline.Prepared{
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "flood", Scripted: true}},
		Call: agentfleet.ToolCall{ID: "call_flood", Name: "flood"}, Timeout: 60 * time.Second, Agent: "a", Allowed: []string{"flood"},
	}, func(p any) {
		b, _ := json.Marshal(p)
		mu.Lock()
		n, total = n+1, total+len(b)
		mu.Unlock()
	})
	if err != nil || agentfleet.JoinText(res.Content) != "flooded" {
		t.Fatalf("flood = %v, %v; want its result", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n == 0 || total > limit {
		t.Errorf("%d progress values of %d bytes reached the client, want some and at most %d", n, total, limit)
	}
}
