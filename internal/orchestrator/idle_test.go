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

// TestIdleDurableSessionReadsAsStored runs a durable session and lets it go
// idle: it keeps its history packed, a reader of it through the
// orchestrator sees the messages the history stream holds, and the session
// asked again goes on from its whole history.
func TestIdleDurableSessionReadsAsStored(t *testing.T) {
	f := startFleet(t, orchestrator.Config{Model: loop.ModelFunc(toolThenAnswer), Durable: true},
		toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	idle := func() *loop.Session {
		t.Helper()
		s, err := f.orch.Session("default", "packed")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, text := range []string{"one", "two"} {
		if got := agentfleet.JoinText(f.ask(t, "default", "packed", text).Content); got != "done" {
			t.Fatalf("answer to %s = %q, want done", text, got)
		}
		s := idle()
		if !s.Packed() {
			t.Fatalf("after the run of %s the idle session does not keep its history packed", text)
		}
		live, err := json.Marshal(s.History())
		if err != nil {
			t.Fatal(err)
		}
		stored, err := json.Marshal(loadHistory(t, f.nc, "default", "packed").Messages())
		if err != nil {
			t.Fatal(err)
		}
		if string(live) != string(stored) {
			t.Errorf("after %s the idle session's history reads\n%s\nthe stored one\n%s", text, live, stored)
		}
		if !s.Packed() {
			t.Error("reading the history of an idle session unpacked it")
		}
	}
	if got, want := roles(idle().History()), "user:one assistant tool assistant user:two assistant tool assistant"; got != want {
		t.Errorf("history after a second run = %s, want %s", got, want)
	}
}
