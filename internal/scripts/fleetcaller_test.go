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
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/scripts"
)

// TestFleetCallerErrorResult: a nested call whose worker answers with an
// error result fails with a *script.ResultError carrying that result, so
// that call_tool(full=True) hands it to the script, and its text is the
// worker's error.
func TestFleetCallerErrorResult(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{
		Name: "w", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tools: []*agentfleet.Tool{{
			ToolDef: agentfleet.ToolDef{Name: "disk", Description: "disk"},
			Handler: agentfleet.HandlerFunc(func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
				return nil, errors.New("disk full")
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
	ctx = toolrpc.WithCaller(ctx, toolrpc.Caller{Agent: "agent-a", Allowed: []string{"disk"}})
	// The worker may not have joined the tool's queue group yet: no
	// responders is waited for within the call (NoResponderWait).
	res, err := scripts.FleetCaller(client, 0)(ctx, &agentfleet.ToolCall{ID: "call_1~d1~x", Name: "disk"})
	re, ok := errors.AsType[*script.ResultError](err)
	if !ok || res != nil {
		t.Fatalf("FleetCaller = %v, %v; want a *script.ResultError", res, err)
	}
	if got, want := agentfleet.JoinText(re.Result.Content), "disk full"; got != want || err.Error() != want {
		t.Errorf("result text = %q, error %q; want %q", got, err.Error(), want)
	}
	if re.Result.Worker == "" {
		t.Errorf("result names no worker: %+v", re.Result)
	}
}

// TestDefaultCallTimeout: a nested call without a deadline is bounded as
// the pipeline bounds a call.
func TestDefaultCallTimeout(t *testing.T) {
	if got, want := scripts.DefaultCallTimeout, pipeline.DefaultTimeout; got != want {
		t.Errorf("DefaultCallTimeout = %v, want the pipeline's %v", got, want)
	}
}
