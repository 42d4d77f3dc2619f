package toolrpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/nats-io/nats.go/micro"
)

// TestDrainRefusesCallsStillQueued holds a call in the endpoint's
// subscription, behind a request whose handling is blocked, while the
// server drains: Drain returns with no call in flight, and the call, which
// reaches the handler only then, is refused as busy (so that the client
// sends it to another worker) rather than run past the drain, whose end is
// when the process exits and drops its results.
func TestDrainRefusesCallsStillQueued(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	wc, cc := bustest.MustConnect(t, srv), bustest.MustConnect(t, srv)
	var ran atomic.Int64
	echo := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "echo", Description: "answers at once"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			ran.Add(1)
			return agentfleet.TextResult("echo"), nil
		}),
	}
	blocked, release := make(chan struct{}), make(chan struct{})
	s, err := toolrpc.Serve(wc, toolrpc.ServerConfig{
		Tools: []*agentfleet.Tool{echo},
		// The handler reports a bad request before it returns: blocking
		// here holds the endpoint's subscription, one request at a time.
		Observe: func(tool, outcome string, d time.Duration) {
			if outcome == "bad_request" {
				close(blocked)
				<-release
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	replies, err := cc.SubscribeSync(cc.NewRespInbox())
	if err != nil {
		t.Fatal(err)
	}
	subjects, err := bus.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	subject := subjects.Tool("echo")
	if err := cc.PublishRequest(subject, cc.NewRespInbox(), []byte("not a call request")); err != nil {
		t.Fatal(err)
	}
	<-blocked
	req, err := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "queued", Tool: "echo", Args: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.PublishRequest(subject, replies.Subject, req); err != nil {
		t.Fatal(err)
	}
	// The server answers each connection in order: once both round trips
	// are done, the call sits in the worker's subscription.
	if err := cc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := wc.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	close(release)

	m, err := replies.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no answer to the queued call: %v", err)
	}
	f, err := wire.DecodeFrame(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if f.T != wire.FrameBusy || m.Header.Get(toolrpc.HeaderBusy) != "worker draining" {
		t.Errorf("answer %q (%s), want a busy frame saying the worker drains", f.T, m.Header.Get(toolrpc.HeaderBusy))
	}
	if h := m.Header.Get(micro.ErrorHeader); h != "" {
		t.Errorf("busy refusal carries %s: %q; a refusal is not a service error", micro.ErrorHeader, h)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the tool ran %d times after Drain returned", n)
	}
}

// TestRequestWithoutReplyIsNotRun publishes a good call request without a
// reply subject, then one with: only the second runs, the first is counted.
func TestRequestWithoutReplyIsNotRun(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	wc, cc := bustest.MustConnect(t, srv), bustest.MustConnect(t, srv)
	var ran atomic.Int64
	echo := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "echo", Description: "answers at once"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			ran.Add(1)
			return agentfleet.TextResult("echo"), nil
		}),
	}
	outcomes := make(chan string, 4)
	s, err := toolrpc.Serve(wc, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo}, Observe: func(tool, outcome string, d time.Duration) { outcomes <- outcome }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	req, _ := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "c", Tool: "echo", Args: map[string]any{}})
	if err := cc.Publish("agent.tool.echo", req); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Request("agent.tool.echo", req, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := <-outcomes; got != "no_reply" {
		t.Errorf("first outcome %q, want no_reply", got)
	}
	if got := <-outcomes; got != "ok" {
		t.Errorf("second outcome %q, want ok", got)
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
	if n := s.NoReply(); n != 1 {
		t.Errorf("NoReply() = %d, want 1", n)
	}
}

// TestClosedConnectionCancelsTheCall closes a worker's connection while a
// call runs: the call's next heartbeat cannot go out, and the call is
// cancelled with ErrConnectionClosed rather than beating into the void
// until the process exits.
func TestClosedConnectionCancelsTheCall(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	wc, cc := bustest.MustConnect(t, srv), bustest.MustConnect(t, srv)
	running, cause := make(chan struct{}), make(chan error, 1)
	block := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "block", Description: "runs until cancelled"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			close(running)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil, ctx.Err()
		}),
	}
	s, err := toolrpc.Serve(wc, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{block}, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	req, _ := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "c", Tool: "block", Args: map[string]any{}})
	if err := cc.PublishRequest("agent.tool.block", cc.NewRespInbox(), req); err != nil {
		t.Fatal(err)
	}
	<-running
	wc.Close()
	select {
	case err := <-cause:
		if err != toolrpc.ErrConnectionClosed {
			t.Errorf("cause = %v, want %v", err, toolrpc.ErrConnectionClosed)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call still runs 10s after its connection closed")
	}
	bustest.Eventually(t, "no call in flight", func() bool { return s.InFlight() == 0 })
}
