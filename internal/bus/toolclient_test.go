package bus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

func prepared(name string, args map[string]any) *pipeline.Prepared {
	return &pipeline.Prepared{
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name}},
		Call: agentfleet.ToolCall{ID: "c-" + name, Name: name, Arguments: args}, Args: args, Timeout: 10 * time.Second,
	}
}

// TestOversizedResultIsAnErrorResult serves a tool whose result cannot fit
// the server's max payload: the call ends with an error result saying so,
// instead of a dropped message and a timeout.
func TestOversizedResultIsAnErrorResult(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	big := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "big", Description: "returns too much"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult(strings.Repeat("x", 2<<20)), nil
		}),
	}
	w, err := bus.Serve(bustest.MustConnect(t, srv), bus.ServerConfig{Tools: []*agentfleet.Tool{big}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c, err := bus.NewToolClient(bustest.MustConnect(t, srv), bus.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Execute(context.Background(), prepared("big", map[string]any{}), func(any) {})
	if err == nil || !strings.Contains(err.Error(), "exceeds the NATS max payload") || !strings.Contains(err.Error(), "code 413") {
		t.Errorf("err = %v, want a 413 naming the max payload", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}

	// Arguments too large to send fail before sending.
	_, err = c.Execute(context.Background(), prepared("big", map[string]any{"blob": strings.Repeat("y", 2<<20)}), func(any) {})
	if err == nil || !strings.Contains(err.Error(), "arguments of") {
		t.Errorf("oversized arguments: err = %v", err)
	}
}

// TestSentAfterPublish: the client says when the call is on its way, before
// the worker's result comes back, and not for a call it could not send.
func TestSentAfterPublish(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	release := make(chan struct{})
	hold := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "hold", Description: "waits to be released"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			<-release
			return agentfleet.TextResult("released"), nil
		}),
	}
	w, err := bus.Serve(bustest.MustConnect(t, srv), bus.ServerConfig{Tools: []*agentfleet.Tool{hold}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c, err := bus.NewToolClient(bustest.MustConnect(t, srv), bus.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := make(chan struct{}, 4)
	prep := prepared("hold", map[string]any{})
	prep.Sent = func() { sent <- struct{}{} }
	done := make(chan error, 1)
	go func() {
		_, err := c.Execute(context.Background(), prep, func(any) {})
		done <- err
	}()
	<-sent // the call is out while the tool still holds it
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(sent); n != 0 {
		t.Errorf("Sent called %d more times for one attempt", n)
	}

	big := prepared("hold", map[string]any{"blob": strings.Repeat("y", 2<<20)})
	big.Sent = func() { t.Error("Sent called for a call that was never sent") }
	if _, err := c.Execute(context.Background(), big, func(any) {}); err == nil {
		t.Error("oversized arguments: no error")
	}
}
