package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// toolThenAnswer calls echo once in a run, then answers "done" with what it
// saw; it keeps no state, so that any number of sessions can use it.
func toolThenAnswer(_ context.Context, req *loop.Request, _ loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	if _, ok := req.Messages[len(req.Messages)-1].(*agentfleet.ToolResultMessage); ok {
		return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text("done")}, StopReason: agentfleet.StopReasonStop}, nil
	}
	id := fmt.Sprintf("call_%s_%d", req.Session, len(req.Messages))
	return &agentfleet.AssistantMessage{StopReason: agentfleet.StopReasonToolUse, Content: []agentfleet.Content{{
		Type: agentfleet.ContentToolCall, ID: id, Name: "echo", Arguments: json.RawMessage(`{"text":"` + id + `"}`),
	}}}, nil
}

// TestIdleSessionsAreCompact runs many sessions over a real NATS server and
// lets them go idle: each idle session is in its compact form (no run, no
// queue, its history without spare capacity), the orchestrator holds no
// goroutine for any of them (the count is what it was with one session
// idle), and a session asked again goes on from its whole history.
func TestIdleSessionsAreCompact(t *testing.T) {
	const n = 200
	f := startFleet(t, orchestrator.Config{Model: loop.ModelFunc(toolThenAnswer)}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	session := func(i int) string { return fmt.Sprintf("idle%03d", i) }
	idle := func(i int) *loop.Session {
		t.Helper()
		s, err := f.orch.Session("default", session(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := agentfleet.JoinText(f.ask(t, "default", session(0), "hello").Content); got != "done" {
		t.Fatalf("answer = %q, want done", got)
	}
	idle(0)
	before := runtime.NumGoroutine()
	for i := 1; i < n; i++ {
		if got := agentfleet.JoinText(f.ask(t, "default", session(i), "hello").Content); got != "done" {
			t.Fatalf("answer of %s = %q, want done", session(i), got)
		}
	}
	for i := range n {
		if s := idle(i); !s.Compacted() {
			t.Errorf("idle session %s is not compacted", session(i))
		}
	}
	// Goroutines of the test's own (NATS, the worker) come and go: allow a
	// few, not one per session.
	if after := runtime.NumGoroutine(); after > before+n/10 {
		t.Errorf("goroutines with %d sessions idle = %d, with one idle %d: an idle session holds some", n, after, before)
	}
	if got := agentfleet.JoinText(f.ask(t, "default", session(7), "again").Content); got != "done" {
		t.Fatalf("second answer = %q, want done", got)
	}
	s := idle(7)
	if got, want := roles(s.History()), "user:hello assistant tool assistant user:again assistant tool assistant"; got != want {
		t.Errorf("history after a second run = %s, want %s", got, want)
	}
	if !s.Compacted() {
		t.Error("a session idle after its second run is not compacted")
	}
}
