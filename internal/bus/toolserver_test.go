package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
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
	s, err := bus.Serve(wc, bus.ServerConfig{
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
	req, err := bus.EncodeRequest(&bus.CallRequest{V: bus.ProtocolVersion, ID: "queued", Tool: "echo", Args: map[string]any{}})
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
	f, err := bus.DecodeFrame(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if f.T != bus.FrameBusy || m.Header.Get(bus.HeaderBusy) != "worker draining" {
		t.Errorf("answer %q (%s), want a busy frame saying the worker drains", f.T, m.Header.Get(bus.HeaderBusy))
	}
	if h := m.Header.Get(micro.ErrorHeader); h != "" {
		t.Errorf("busy refusal carries %s: %q; a refusal is not a service error", micro.ErrorHeader, h)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the tool ran %d times after Drain returned", n)
	}
}
