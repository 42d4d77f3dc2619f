package toolrpc_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/nats-io/nats.go"
)

// serveOne serves tool on a worker beating every MinHeartbeat and returns a
// client connection.
func serveOne(t *testing.T, tool *agentfleet.Tool) *nats.Conn {
	t.Helper()
	srv := bustest.MustRunNATS(t)
	s, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{tool}, Heartbeat: wire.MinHeartbeat})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return bustest.MustConnect(t, srv)
}

// callFrames sends a call request and returns the types of the frames that
// come back until the final one, and the final frame; then it waits a
// little to see that no frame follows. seen, if not nil, is called with
// the types so far after each frame.
func callFrames(t *testing.T, nc *nats.Conn, req *wire.CallRequest, seen func([]string)) (types []string, final *wire.Frame) {
	t.Helper()
	sub, err := nc.SubscribeSync(nc.NewRespInbox())
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest("agent.tool."+req.Tool, sub.Subject, b); err != nil {
		t.Fatal(err)
	}
	for final == nil {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("after frames %v: %v", types, err)
		}
		f, err := wire.DecodeFrame(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, f.T)
		if seen != nil {
			seen(types)
		}
		if f.T == wire.FrameResult || f.T == wire.FrameError || f.T == wire.FrameBusy {
			final = f
		}
	}
	if m, err := sub.NextMsg(5 * wire.MinHeartbeat); err == nil {
		t.Errorf("a frame after the final one: %q", m.Data)
	}
	return types, final
}

// TestCallAcksThenBeats runs a quick call, which sends its result alone,
// and a slow one, which sends the ack after AckDelay, heartbeats, its
// progress in order and then its result. The slow call waits on the frames
// the test has seen, not on a clock: it reports progress once the ack and
// a heartbeat are in, and ends once the progress is.
func TestCallAcksThenBeats(t *testing.T) {
	proceed, finish := make(chan struct{}), make(chan struct{})
	nc := serveOne(t, &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "wait"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if c.ID == "slow" {
				for _, ch := range []chan struct{}{proceed, finish} {
					select {
					case <-ch:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					if ch == proceed {
						c.Progress("half")
					}
				}
			}
			return agentfleet.TextResult("done"), nil
		}),
	})
	sent := time.Now()
	types, final := callFrames(t, nc, &wire.CallRequest{V: 1, ID: "quick", Tool: "wait", Args: map[string]any{}}, nil)
	// Whether a quick call beats AckDelay is up to the scheduler: on a busy
	// machine the worker's goroutine may wait longer than that before the
	// handler returns, and then the ack goes first, as it must. Only a
	// call answered within AckDelay of its request can show that the ack
	// was left out.
	if took := time.Since(sent); took > toolrpc.AckDelay && strings.Join(types, " ") == "ack result" {
		t.Logf("quick call answered after %v, past AckDelay: acked first", took)
	} else if len(types) != 1 || final.T != wire.FrameResult {
		t.Errorf("quick call sent %v, want its result alone", types)
	}
	proceeded, finished := false, false
	types, final = callFrames(t, nc, &wire.CallRequest{V: 1, ID: "slow", Tool: "wait", Args: map[string]any{}}, func(seen []string) {
		got := strings.Join(seen, " ")
		if !proceeded && strings.HasPrefix(got, "ack ") && strings.Contains(got, " hb") {
			proceeded = true
			close(proceed)
		}
		if !finished && strings.Contains(got, "progress") {
			finished = true
			close(finish)
		}
	})
	got := strings.Join(types, " ")
	if !strings.HasPrefix(got, "ack hb") || !strings.Contains(got, "hb progress") || final.T != wire.FrameResult {
		t.Errorf("slow call sent %q, want ack, then heartbeats and progress, then result", got)
	}
	if strings.Count(got, "ack") != 1 {
		t.Errorf("slow call sent %q, want one ack", got)
	}
}

// TestProgressBeforeAckDelayFollowsTheAck runs a call whose progress comes
// at once, before AckDelay: the worker sends the ack first, then the
// progress, and no second ack.
func TestProgressBeforeAckDelayFollowsTheAck(t *testing.T) {
	nc := serveOne(t, &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "early"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			c.Progress("started")
			return agentfleet.TextResult("done"), nil
		}),
	})
	types, final := callFrames(t, nc, &wire.CallRequest{V: 1, ID: "e", Tool: "early", Args: map[string]any{}}, nil)
	if got, want := strings.Join(types, " "), "ack progress result"; got != want || final.T != wire.FrameResult {
		t.Errorf("call sent %q, want %q", got, want)
	}
}

// TestCallBoundCancels runs a call past the worker's bound (timeout_ms plus
// 10 % plus 1 s): the tool's context reports the bound as its deadline and
// ends with context.DeadlineExceeded, and the result says the tool stopped.
func TestCallBoundCancels(t *testing.T) {
	errs := make(chan error, 1)
	var deadline time.Time
	nc := serveOne(t, &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "block"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			deadline, _ = ctx.Deadline()
			<-ctx.Done()
			errs <- ctx.Err()
			return nil, ctx.Err()
		}),
	})
	start := time.Now()
	_, final := callFrames(t, nc, &wire.CallRequest{V: 1, ID: "b", Tool: "block", Args: map[string]any{}, TimeoutMS: 10}, nil)
	if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ctx.Err() = %v, want context.DeadlineExceeded", err)
	}
	if d := deadline.Sub(start); d < time.Second || d > 2*time.Second {
		t.Errorf("deadline %v after the call, want about 1.01s", d)
	}
	if text := agentfleet.JoinText(final.Result.Content); !final.IsError || text != "Tool block stopped: context deadline exceeded" {
		t.Errorf("result %q (is_error %v)", text, final.IsError)
	}
}

// TestCallThatExitsFreesItsSlot runs a tool that leaves its goroutine by
// runtime.Goexit on a worker of concurrency 1: it sends no final frame,
// but gives its slot back, and the next call runs.
func TestCallThatExitsFreesItsSlot(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	exits := make(chan struct{}, 1)
	tool := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "t"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if c.ID == "exit" {
				exits <- struct{}{}
				runtime.Goexit()
			}
			return agentfleet.TextResult("ran"), nil
		}),
	}
	s, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{tool}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	nc := bustest.MustConnect(t, srv)
	b, _ := wire.EncodeRequest(&wire.CallRequest{V: 1, ID: "exit", Tool: "t", Args: map[string]any{}})
	if err := nc.PublishRequest("agent.tool.t", nc.NewRespInbox(), b); err != nil {
		t.Fatal(err)
	}
	<-exits
	for deadline := time.Now().Add(5 * time.Second); s.InFlight() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in flight after the tool exited", s.InFlight())
		}
	}
	_, final := callFrames(t, nc, &wire.CallRequest{V: 1, ID: "next", Tool: "t", Args: map[string]any{}}, nil)
	if final.T != wire.FrameResult || agentfleet.JoinText(final.Result.Content) != "ran" {
		t.Errorf("next call answered %q, want its result", final.T)
	}
}
