package scripts_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/scripts"
)

// TestFleetCallerPassesTheFence: a script's nested call carries the fence
// of the call that runs the script, so the tool it calls sees it, and a
// worker that saw a later claim of the partition refuses the nested call
// of a deposed owner as fenced.
func TestFleetCallerPassesTheFence(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	seen := make(chan ownership.Fence, 4)
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{
		Name: "w", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tools: []*agentfleet.Tool{{
			ToolDef: agentfleet.ToolDef{Name: "disk", Description: "disk"},
			Handler: agentfleet.HandlerFunc(func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
				c, _ := toolrpc.CallerFrom(ctx)
				seen <- c.Fence
				return agentfleet.TextResult("ok"), nil
			}),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	client, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nested := func(f ownership.Fence) error {
		ctx := toolrpc.WithCaller(ctx, toolrpc.Caller{Agent: "agent-a", Allowed: []string{"disk"}, Fence: f})
		_, err := scripts.FleetCaller(client, 0)(ctx, &agentfleet.ToolCall{ID: "call_1~d1~x", Name: "disk"})
		return err
	}
	newer := ownership.Fence{Partition: 3, Owner: "o2", Epoch: 9}
	if err := nested(newer); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != newer {
		t.Errorf("the nested call's tool saw fence %v, want %v", got, newer)
	}
	if err := nested(ownership.Fence{Partition: 3, Owner: "o1", Epoch: 4}); !errors.Is(err, toolrpc.ErrFenced) {
		t.Errorf("the deposed owner's nested call: %v, want ErrFenced", err)
	}
}
