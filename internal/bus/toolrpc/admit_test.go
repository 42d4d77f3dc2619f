package toolrpc_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// TestAdmitRefusesAsBusy: a call that ServerConfig.Admit refuses is
// answered with a busy frame whose Agentfleet-Busy header says why, and
// never runs; the client sends it again, and once admitted it runs and
// gives back what it was granted exactly once.
func TestAdmitRefusesAsBusy(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	wc, cc := bustest.MustConnect(t, srv), bustest.MustConnect(t, srv)
	var ran, admitted, released, refusals atomic.Int64
	full := atomic.Bool{}
	full.Store(true)
	echo := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "echo", Description: "answers at once"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			ran.Add(1)
			return agentfleet.TextResult("echo"), nil
		}),
	}
	s, err := toolrpc.Serve(wc, toolrpc.ServerConfig{
		Tools: []*agentfleet.Tool{echo},
		Admit: func(*agentfleet.Tool) (func(), error) {
			if full.Load() {
				refusals.Add(1)
				return nil, errors.New("the budget is full")
			}
			admitted.Add(1)
			return func() { released.Add(1) }, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	replies, err := cc.SubscribeSync(cc.NewRespInbox())
	if err != nil {
		t.Fatal(err)
	}
	subjects, _ := bus.NewSubjects("")
	req, _ := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "c1", Tool: "echo", Args: map[string]any{}})
	if err := cc.PublishRequest(subjects.Tool("echo"), replies.Subject, req); err != nil {
		t.Fatal(err)
	}
	m, err := replies.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f, err := wire.DecodeFrame(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if f.T != wire.FrameBusy || m.Header.Get(toolrpc.HeaderBusy) != "worker busy: the budget is full" {
		t.Errorf("answer %q (%s), want a busy frame saying the budget is full", f.T, m.Header.Get(toolrpc.HeaderBusy))
	}
	if ran.Load() != 0 {
		t.Error("a refused call ran")
	}

	// The client sends it again until it is admitted.
	client, err := toolrpc.NewToolClient(cc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	before := refusals.Load()
	done := make(chan error, 1)
	go func() {
		res, err := fleetexec.Executor{Client: client}.Execute(context.Background(), &pipeline.Prepared{
			Tool: &agentfleet.Tool{ToolDef: echo.ToolDef}, Call: agentfleet.ToolCall{ID: "c2", Name: "echo"}, Timeout: 30 * time.Second,
		}, func(any) {})
		if err == nil && agentfleet.JoinText(res.Content) != "echo" {
			err = errors.New("wrong result " + agentfleet.JoinText(res.Content))
		}
		done <- err
	}()
	bustest.Eventually(t, "the call refused again", func() bool { return refusals.Load() > before })
	full.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("the call once admitted: %v", err)
	}
	bustest.Eventually(t, "the grant given back", func() bool { return released.Load() == 1 })
	if ran.Load() != 1 || admitted.Load() != 1 || released.Load() != 1 {
		t.Errorf("ran %d, admitted %d, released %d; want 1 each", ran.Load(), admitted.Load(), released.Load())
	}
}
