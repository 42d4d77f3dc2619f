package toolrpc_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// fencedWorker serves a tool that counts its executions and reports the
// fence each one came with.
func fencedWorker(t *testing.T, nc *nats.Conn) (ran *atomic.Int64, fences chan ownership.Fence) {
	t.Helper()
	ran, fences = new(atomic.Int64), make(chan ownership.Fence, 16)
	tool := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "effect", Description: "a side effect"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			ran.Add(1)
			caller, _ := toolrpc.CallerFrom(ctx)
			fences <- caller.Fence
			return agentfleet.TextResult("done"), nil
		}),
	}
	s, err := toolrpc.Serve(nc, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{tool}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return ran, fences
}

// TestDeposedOwnerRefusedByWorker has two owners of one partition, on two
// connections: the first, at epoch 1, calls; the second, which claimed the
// partition at epoch 2, calls; then the first calls again, as a deposed
// owner that was paused would. Its call is refused as fenced (ErrFenced,
// not an outcome unknown), the tool does not run for it, and the new
// owner's calls, and calls without a fence, still run.
func TestDeposedOwnerRefusedByWorker(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	ran, seen := fencedWorker(t, bustest.MustConnect(t, srv))
	clients := make([]*toolrpc.ToolClient, 2)
	for i := range clients {
		c, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), toolrpc.ClientConfig{})
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	old := ownership.Fence{Partition: 5, Owner: "orch-old", Epoch: 1}
	cur := ownership.Fence{Partition: 5, Owner: "orch-new", Epoch: 2}
	call := func(c *toolrpc.ToolClient, id string, f ownership.Fence) error {
		_, err := c.Execute(context.Background(), &toolrpc.Call{ID: id, Name: "effect", Args: map[string]any{}, Timeout: 10 * time.Second, Session: "s", Fence: f}, func(any) {})
		return err
	}
	if err := call(clients[0], "c1", old); err != nil {
		t.Fatalf("the first owner's call: %v", err)
	}
	if got := <-seen; got != old {
		t.Errorf("the tool saw fence %v, want %v", got, old)
	}
	if err := call(clients[1], "c2", cur); err != nil {
		t.Fatalf("the new owner's call: %v", err)
	}
	<-seen
	err := call(clients[0], "c3", old)
	if !errors.Is(err, toolrpc.ErrFenced) || !errors.Is(err, ownership.ErrFenced) {
		t.Fatalf("the deposed owner's call: %v, want ErrFenced", err)
	}
	for _, want := range []string{"Tool effect", `owner "orch-new"`, "epoch 2", "did not run", wire.CodeFenced} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if errors.Is(err, toolrpc.ErrWorkerLost) || errors.Is(err, toolrpc.ErrTimeout) {
		t.Errorf("a fenced call reads as of unknown outcome: %v", err)
	}
	if err := call(clients[1], "c4", cur); err != nil {
		t.Fatalf("the new owner's second call: %v", err)
	}
	<-seen
	if err := call(clients[0], "c5", ownership.Fence{}); err != nil {
		t.Fatalf("an unfenced call: %v", err)
	}
	<-seen
	if got := ran.Load(); got != 4 {
		t.Errorf("the tool ran %d times, want 4 (the deposed owner's second call not)", got)
	}
}

// TestFenceHeaderHostile sends call requests whose Agentfleet-Fence is
// garbage, empty of an owner, or oversized: each is answered with a bad
// request error frame (and micro's error headers) that names the header
// and what is wrong, and the tool does not run.
func TestFenceHeaderHostile(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	ran, _ := fencedWorker(t, bustest.MustConnect(t, srv))
	nc := bustest.MustConnect(t, srv)
	subjects, err := bus.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	req, err := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "h", Tool: "effect", Args: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"garbage", "garbage", "no '.' after the partition"},
		{"no owner", "1.2.", "the owner is empty"},
		{"epoch zero", "1.0.o", `epoch "0"`},
		{"oversized", "1.2." + strings.Repeat("x", 900), "more than 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := nats.NewMsg(subjects.Tool("effect"))
			m.Data = req
			m.Header.Set(toolrpc.HeaderFence, tc.value)
			reply, err := nc.RequestMsg(m, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			f, err := wire.DecodeFrame(reply.Data)
			if err != nil {
				t.Fatal(err)
			}
			if f.T != wire.FrameError || f.Code != wire.CodeBadRequest {
				t.Fatalf("frame %s code %s, want an error frame of code %s", f.T, f.Code, wire.CodeBadRequest)
			}
			if !strings.Contains(f.Error, toolrpc.HeaderFence) || !strings.Contains(f.Error, tc.want) {
				t.Errorf("error %q does not name %s and say %q", f.Error, toolrpc.HeaderFence, tc.want)
			}
			if got := reply.Header.Get(micro.ErrorCodeHeader); got != wire.CodeBadRequest {
				t.Errorf("%s = %q, want %s", micro.ErrorCodeHeader, got, wire.CodeBadRequest)
			}
		})
	}
	if got := ran.Load(); got != 0 {
		t.Errorf("the tool ran %d times for bad fences, want 0", got)
	}
}
