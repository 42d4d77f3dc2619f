package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startModelOrchestrator starts the orchestrator program as a child
// process whose model is the OpenAI-compatible server at baseURL.
func startModelOrchestrator(t *testing.T, args, baseURL string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ORCHESTRATOR_CHILD_ARGS="+args, "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+baseURL)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// TestApprovalSurvivesKilledOrchestrator kills the orchestrator process
// with SIGKILL while a call of echo (neither idempotent nor read-only)
// waits for approval, publishes the decision while no orchestrator owns the
// session, and starts another orchestrator: it takes the session over,
// finds the call waiting in the stored history (it never ran, so it is not
// settled as of unknown outcome), takes the decision stored meanwhile, runs
// the call once, and the run ends. The stored history holds the request, the decision, one result and
// one end.
func TestApprovalSurvivesKilledOrchestrator(t *testing.T) {
	for _, whileDown := range []bool{true, false} {
		name := "decided while down"
		if !whileDown {
			name = "decided once the new owner waits"
		}
		t.Run(name, func(t *testing.T) { approvalAfterKill(t, whileDown) })
	}
}

// approvalAfterKill is TestApprovalSurvivesKilledOrchestrator with the
// decision published before the new orchestrator owns the session
// (whileDown), or after it waits for the call again, with the deadline
// of the first wait.
func approvalAfterKill(t *testing.T, whileDown bool) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_w", Name: "echo", Arguments: `{"text":"approved after the crash"}`}).Response(),
		llmtest.TextReply("done").Response(),
	)
	srv := bustest.MustRunNATS(t)
	nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	approvals, _ := nc.SubscribeSync("agent.events.default.wait.tool.approval")
	out, _ := nc.SubscribeSync("agent.out.default.wait")
	nc.Flush()
	profiles := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(profiles, []byte("agents:\n  - name: default\n    approve: [echo]\n    approval_timeout: 10m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := "--nats-url " + srv.ClientURL() + " --workers 1 --ack-wait 1s --lease-ttl 1s --shutdown-timeout 200ms --log-level warn --http 127.0.0.1:0 --model test-model --config " + profiles
	first := startModelOrchestrator(t, args, llm.BaseURL())
	js, _ := jetstream.New(nc)
	bustest.Eventually(t, "the input stream", func() bool {
		_, err := js.Stream(context.Background(), "AGENT_INPUT")
		return err == nil
	})
	if err := nc.Publish("agent.in.default.wait", []byte(`{"content":"echo it","id":"wait-1"}`)); err != nil {
		t.Fatal(err)
	}
	pending := nextEvent(t, approvals)
	if pending.Decision != agentfleet.ApprovalPending || pending.ToolCallID != "call_w" || pending.Deadline == nil {
		t.Fatalf("first tool.approval = %+v", pending)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()

	startModelOrchestrator(t, args, llm.BaseURL())
	if !whileDown {
		again := nextEvent(t, approvals)
		if again.Decision != agentfleet.ApprovalPending || again.ToolCallID != "call_w" || again.Deadline == nil || !again.Deadline.Equal(*pending.Deadline) {
			t.Fatalf("tool.approval after the restart = %+v, want call_w pending until %v", again, pending.Deadline)
		}
	}
	// While down, the decision is published before the new orchestrator
	// owns the session: it stores it in the input stream, and the owner
	// answers once the decision acts.
	decision := []byte(`{"tool_call_id":"call_w","approve":true}`)
	var reply agentfleet.ApprovalReply
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := nc.Request("agent.approve.default.wait", decision, 30*time.Second)
		if errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline) {
			// The new orchestrator does not subscribe yet.
			bustest.Eventually(t, "an orchestrator's approve subscription", func() bool {
				_, err := nc.Request("agent.approve.default.nobody", []byte(`{}`), time.Second)
				return !errors.Is(err, nats.ErrNoResponders)
			})
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(m.Data, &reply); err != nil {
			t.Fatal(err)
		}
		break
	}
	if !reply.OK || reply.Decision != agentfleet.ApprovalApproved {
		t.Fatalf("decision reply = %+v", reply)
	}
	// The new owner took the call up where it was: the stored decision
	// acts, and the call was not settled as of unknown outcome.
	again := nextEvent(t, approvals)
	if again.Decision != agentfleet.ApprovalApproved || again.ToolCallID != "call_w" || again.DecisionID != reply.DecisionID {
		t.Errorf("second tool.approval = %+v, want call_w approved by %s", again, reply.DecisionID)
	}
	m, err := out.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatalf("no final message after the restart: %v", err)
	}
	var final agentfleet.AssistantMessage
	json.Unmarshal(m.Data, &final)
	if final.StopReason != agentfleet.StopReasonStop || agentfleet.JoinText(final.Content) != "done" {
		t.Errorf("final = %s %q", final.StopReason, agentfleet.JoinText(final.Content))
	}
	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	results := map[string]string{}
	for _, msg := range reqs[1].Messages {
		if msg.Role == "tool" {
			results[msg.ToolCallID] = msg.Text()
		}
	}
	if got := results["call_w"]; got != "approved after the crash" {
		t.Errorf("result the model saw = %q, want the echo of the approved call", got)
	}

	subjects, _ := bus.NewSubjects("")
	h, err := history.Open(context.Background(), js, subjects, "", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.Load(context.Background(), "default", "wait")
	if err != nil {
		t.Fatal(err)
	}
	var requests, decisions, toolResults, ends int
	for _, r := range st.Records {
		switch {
		case r.Approval != nil:
			requests++
		case r.Decision != nil:
			decisions++
			if !r.Decision.Approve || r.Decision.ID != reply.DecisionID {
				t.Errorf("stored decision = %+v, want the approval %s", r.Decision, reply.DecisionID)
			}
		case r.Final != nil:
			ends++
		default:
			if tr, ok := r.Message.(*agentfleet.ToolResultMessage); ok {
				toolResults++
				if tr.IsError {
					t.Errorf("stored result is an error: %q", agentfleet.JoinText(tr.Content))
				}
			}
		}
	}
	if requests != 1 || decisions != 1 || toolResults != 1 || ends != 1 {
		t.Errorf("history holds %d requests, %d decisions, %d tool results, %d ends; want one of each", requests, decisions, toolResults, ends)
	}
}

func nextEvent(t *testing.T, sub *nats.Subscription) agentfleet.Event {
	t.Helper()
	m, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no event on %s: %v", sub.Subject, err)
	}
	var e agentfleet.Event
	if err := json.Unmarshal(m.Data, &e); err != nil {
		t.Fatal(err)
	}
	return e
}
