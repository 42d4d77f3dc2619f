package toolrpc_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/nats-io/nats.go"
)

// TestLateFramesDoNotReachTheNextCall answers every call twice, the second
// time on the inbox of the call before, which has ended: the records of
// ended calls are reused, and a late frame must not reach the call that
// took one over.
func TestLateFramesDoNotReachTheNextCall(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	wc := bustest.MustConnect(t, srv)
	var (
		mu       sync.Mutex
		previous string
	)
	frame := func(text string) []byte {
		b, err := wire.EncodeFrame(&wire.Frame{T: wire.FrameResult, Worker: "w/1", Result: agentfleet.TextResult(text)})
		if err != nil {
			t.Error(err)
		}
		return b
	}
	stale := frame("stale")
	_, err := wc.Subscribe("agent.tool.echo", func(m *nats.Msg) {
		req, err := wire.DecodeRequest(m.Data)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		late := previous
		previous = m.Reply
		mu.Unlock()
		if late != "" {
			_ = wc.Publish(late, stale) // a frame after the final one
		}
		_ = wc.Publish(m.Reply, frame(req.ID))
		_ = wc.Publish(m.Reply, stale) // and another on this call's inbox
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := wc.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 200 {
		prep := prepared("echo", map[string]any{})
		prep.Call.ID = "c" + strconv.Itoa(i)
		res, err := fleetexec.Executor{Client: c}.Execute(context.Background(), prep, func(any) {})
		if err != nil {
			t.Fatal(err)
		}
		if got := agentfleet.JoinText(res.Content); got != prep.Call.ID {
			t.Fatalf("call %s got result %q", prep.Call.ID, got)
		}
	}
}
