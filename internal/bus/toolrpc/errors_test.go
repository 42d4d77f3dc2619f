package toolrpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
)

// notifier counts the requests a call sent.
type notifier struct{ sent int }

func (n *notifier) Sent() { n.sent++ }

// TestExecuteErrors calls with the plain Call and checks the client's own
// error kinds and texts: a tool nobody serves, a worker's error result, a
// call that outlives its timeout; and that Notify hears of each request
// that went out.
func TestExecuteErrors(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Name: "w", Tools: []*agentfleet.Tool{
		{
			ToolDef: agentfleet.ToolDef{Name: "fail", Description: "fails"},
			Handler: agentfleet.HandlerFunc(func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
				return nil, errors.New("disk full")
			}),
		},
		{
			ToolDef: agentfleet.ToolDef{Name: "hang", Description: "runs until canceled"},
			Handler: agentfleet.HandlerFunc(func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}),
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	c, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), toolrpc.ClientConfig{NoResponderWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	t.Run("no responders", func(t *testing.T) {
		n := &notifier{}
		_, err := c.Execute(context.Background(), &toolrpc.Call{ID: "c1", Name: "nobody", Timeout: 30 * time.Second, Notify: n}, func(any) {})
		if !errors.Is(err, toolrpc.ErrNoResponders) {
			t.Fatalf("err = %v, want ErrNoResponders", err)
		}
		// After a resend it also says how long it waited: ", for 3ms".
		if want := "Tool nobody: no worker serves the tool (no worker is subscribed to agent.tool.nobody)"; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("err = %q, want it to begin %q", err, want)
		}
		if n.sent == 0 {
			t.Error("Notify heard of no request")
		}
	})
	t.Run("error result", func(t *testing.T) {
		n := &notifier{}
		_, err := c.Execute(context.Background(), &toolrpc.Call{ID: "c2", Name: "fail", Timeout: 30 * time.Second, Notify: n}, func(any) {})
		re, ok := errors.AsType[*toolrpc.ResultError](err)
		if !ok {
			t.Fatalf("err = %v, want a *ResultError", err)
		}
		if got, want := agentfleet.JoinText(re.Result.Content), "disk full"; got != want || err.Error() != want {
			t.Errorf("result %q, err %q; want %q", got, err.Error(), want)
		}
		if re.Result.Worker == "" || re.Result.Attempts != 1 {
			t.Errorf("result worker %q, attempts %d", re.Result.Worker, re.Result.Attempts)
		}
		if n.sent != 1 {
			t.Errorf("Notify heard of %d requests, want 1", n.sent)
		}
	})
	t.Run("timeout, not retried", func(t *testing.T) {
		_, err := c.Execute(context.Background(), &toolrpc.Call{ID: "c3", Name: "hang", Timeout: 200 * time.Millisecond}, func(any) {})
		if !errors.Is(err, toolrpc.ErrTimeout) || errors.Is(err, toolrpc.ErrWorkerLost) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		if want := "Tool hang: tool call timed out after 200ms on worker "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("err = %q, want it to begin %q", err, want)
		}
		if want := "the call's outcome is unknown and it was not retried, because tool hang is not marked idempotent or read_only"; !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to say %q", err, want)
		}
	})
}
