package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// TestApprove decides calls of echo, which the agent's profile puts to a
// person, with the approve command: a rejection with a reason, which the
// model sees, and a second decision on the same call, which is refused
// with the name of the first.
func TestApprove(t *testing.T) {
	url := startFleetWith(t, []orchestrator.Profile{{Name: "default", Approve: []string{"echo"}}})
	nc, err := bus.Connect(bus.ConnectConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	approvals, _ := nc.SubscribeSync("agent.events.default.ap.tool.approval")
	nc.Flush()
	asked := make(chan string, 1)
	go func() {
		stdout, stderr, err := run(t, url, "ask", "default", "ap", "echo please")
		if err != nil {
			t.Errorf("ask: %v %s", err, stderr)
		}
		asked <- stdout
	}()
	m, err := approvals.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var e agentfleet.Event
	json.Unmarshal(m.Data, &e)
	stdout, stderr, err := run(t, url, "approve", "--reject", "--reason", "not today", "default", "ap", e.ToolCallID)
	if err != nil || !strings.HasPrefix(stdout, e.ToolCallID+": rejected (decision ") {
		t.Fatalf("approve --reject: err %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	select {
	case answer := <-asked:
		if !strings.Contains(answer, "the call was rejected: not today") {
			t.Errorf("answer = %q, want the model to have seen the reason", answer)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
	}
	_, _, err = run(t, url, "approve", "default", "ap", e.ToolCallID)
	if err == nil || !strings.Contains(err.Error(), "already decided: rejected by decision") {
		t.Errorf("second decision: err %v, want it refused with the first", err)
	}
	_, _, err = run(t, url, "approve", "--args", `{"text":"x"}`, "default", "ap", "nope")
	if err == nil || !strings.Contains(err.Error(), `no tool call "nope" waits for approval`) {
		t.Errorf("decision on an unknown call: err %v", err)
	}
}

// TestChatApproval answers calls that wait for approval inline in chat: an
// edit, which runs with the new arguments, and a rejection.
func TestChatApproval(t *testing.T) {
	url := startFleetWith(t, []orchestrator.Profile{{Name: "default", Approve: []string{"echo"}}})
	stdin, typing := io.Pipe()
	p := newProg(t, url, stdin, "chat", "default", "ca")
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	write := func(s string) {
		t.Helper()
		if _, err := io.WriteString(typing, s); err != nil {
			t.Fatal(err)
		}
	}
	write("echo hello chat\n")
	p.stdout.waitFor(t, "? echo {\"text\":\"hello chat\"} waits for approval until ", 1)
	write("maybe\n")
	p.stderr.waitFor(t, "answer echo with y, n [reason] or e <json arguments>", 1)
	write(`e {"text":"edited"}` + "\n")
	p.stdout.waitFor(t, "echo: edited\n", 1)
	write("echo again\n")
	p.stdout.waitFor(t, " waits for approval until ", 2)
	write("n not now\n")
	p.stdout.waitFor(t, "echo rejected: not now\n", 1)
	p.stdout.waitFor(t, "> ", 3)
	typing.Close()
	if err := <-done; err != nil {
		t.Fatalf("chat: %v\n%s", err, p.stderr)
	}
}
