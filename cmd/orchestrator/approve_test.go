package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// waits for approval, and starts another orchestrator: it takes the session
// over, finds the call waiting in the stored history (it never ran, so it
// is not settled as of unknown outcome), and takes the decision: one
// published (a plain publish, no reply) while no orchestrator was up, kept
// by the approve stream, approving or rejecting; or one sent as a request
// once the new owner waits again, answered by it. An approved call runs
// once, a rejected one never, and the run ends. The stored history holds
// the request, the decision, one result and one end.
func TestApprovalSurvivesKilledOrchestrator(t *testing.T) {
	for _, tt := range []struct {
		name      string
		whileDown bool
		approve   bool
	}{
		{"approved while down", true, true},
		{"rejected while down", true, false},
		{"decided once the new owner waits", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) { approvalAfterKill(t, tt.whileDown, tt.approve) })
	}
}

// approvalAfterKill is TestApprovalSurvivesKilledOrchestrator with the
// decision published while no orchestrator is up (whileDown), or sent as a
// request after the new owner waits for the call again, with the deadline
// of the first wait.
func approvalAfterKill(t *testing.T, whileDown, approve bool) {
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

	decision := fmt.Appendf(nil, `{"tool_call_id":"call_w","approve":%v,"reason":"said while down"}`, approve)
	var reply agentfleet.ApprovalReply
	if whileDown {
		// Nobody is up to answer: a plain publish, kept by the approve
		// stream (and, through it, the input stream) until an owner is.
		if err := nc.Publish("agent.approve.default.wait", decision); err != nil {
			t.Fatal(err)
		}
		bustest.Eventually(t, "the decision in the input stream", func() bool {
			st, err := js.Stream(context.Background(), "AGENT_INPUT")
			if err != nil {
				return false
			}
			info, err := st.Info(context.Background(), jetstream.WithSubjectFilter("agent.approve.>"))
			return err == nil && info.State.Subjects[fmt.Sprintf("agent.approve.%d.default.wait", bus.Partition("default", "wait"))] == 1
		})
		startModelOrchestrator(t, args, llm.BaseURL())
	} else {
		startModelOrchestrator(t, args, llm.BaseURL())
		again := nextEvent(t, approvals)
		if again.Decision != agentfleet.ApprovalPending || again.ToolCallID != "call_w" || again.Deadline == nil || !again.Deadline.Equal(*pending.Deadline) {
			t.Fatalf("tool.approval after the restart = %+v, want call_w pending until %v", again, pending.Deadline)
		}
		// The owner waits: it answers the request once the decision acts.
		m, err := nc.Request("agent.approve.default.wait", decision, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(m.Data, &reply); err != nil {
			t.Fatal(err)
		}
		if !reply.OK || reply.Decision != agentfleet.ApprovalApproved {
			t.Fatalf("decision reply = %+v", reply)
		}
	}
	wantDecision := agentfleet.ApprovalApproved
	if !approve {
		wantDecision = agentfleet.ApprovalRejected
	}
	// The new owner took the call up where it was: the decision acts, and
	// the call was not settled as of unknown outcome.
	again := nextEvent(t, approvals)
	if whileDown && again.Decision == agentfleet.ApprovalPending {
		// The owner may restore the wait before it takes the decision.
		again = nextEvent(t, approvals)
	}
	if again.Decision != wantDecision || again.ToolCallID != "call_w" || !whileDown && again.DecisionID != reply.DecisionID {
		t.Errorf("second tool.approval = %+v, want call_w %s by %s", again, wantDecision, reply.DecisionID)
	}
	reply.DecisionID = again.DecisionID
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
	switch got := results["call_w"]; {
	case approve && got != "approved after the crash":
		t.Errorf("result the model saw = %q, want the echo of the approved call", got)
	case !approve && !strings.Contains(got, "rejected: said while down"):
		t.Errorf("result the model saw = %q, want the rejection with its reason", got)
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
			if r.Decision.Approve != approve || r.Decision.ID != reply.DecisionID {
				t.Errorf("stored decision = %+v, want %s by %s", r.Decision, wantDecision, reply.DecisionID)
			}
		case r.Final != nil:
			ends++
		default:
			if tr, ok := r.Message.(*agentfleet.ToolResultMessage); ok {
				toolResults++
				if tr.IsError != !approve {
					t.Errorf("stored result is an error %v: %q", tr.IsError, agentfleet.JoinText(tr.Content))
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
