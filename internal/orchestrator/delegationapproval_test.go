package orchestrator_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// carefulTeam is a team whose researcher, asked anything, first calls the
// tool danger.
type carefulTeam struct{ *team }

func (c carefulTeam) Complete(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	if _, user := req.Messages[len(req.Messages)-1].(*agentfleet.UserMessage); user && req.Agent == "researcher" {
		return use(`danger {"x":1}`)(req), nil
	}
	return c.team.Complete(ctx, req, onDelta)
}

// childApprovals returns the child_approval partials of the tool.update
// events of boss's calls.
func childApprovals(f *testFleet) []map[string]any {
	var out []map[string]any
	for _, e := range f.events.list(func(e agentfleet.Event) bool {
		return e.Agent == "boss" && e.Type == agentfleet.EventToolUpdate
	}) {
		if p, ok := e.Partial.(map[string]any); ok {
			if a, ok := p["child_approval"].(map[string]any); ok {
				a["parent_call"], a["parent_tool"] = e.ToolCallID, e.ToolName
				out = append(out, a)
			}
		}
	}
	return out
}

// TestChildApprovalShownOnParent: a call in a child run that waits for
// approval shows on the parent's waiting ask_<name> call as its progress
// (tool.update), naming the child's agent, session, call and tool; events
// on the child's subject that are not the child's (garbage, another
// session) are not reported. A decision on the child's approve subject
// lets the child finish, and the parent gets its result.
func TestChildApprovalShownOnParent(t *testing.T) {
	f := startFleet(t, orchestrator.Config{Model: carefulTeam{newTeam()}, Durable: true, Profiles: []orchestrator.Profile{
		{Name: "boss", Agents: []string{"researcher"}},
		{Name: "researcher", Approve: []string{"danger"}},
	}}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{danger(nil)}})
	answer := make(chan string, 1)
	go func() {
		m, err := f.nc.Request("agent.ask.boss.s1", []byte(`{"content":"via researcher: clean up"}`), 30*time.Second)
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		var a agentfleet.AssistantMessage
		if err := json.Unmarshal(m.Data, &a); err != nil {
			answer <- "error: " + err.Error()
			return
		}
		answer <- agentfleet.JoinText(a.Content)
	}()
	pending := f.events.wait(t, "researcher's tool.approval pending", func(e agentfleet.Event) bool {
		return e.Agent == "researcher" && e.Type == agentfleet.EventToolApproval && e.Decision == agentfleet.ApprovalPending
	})
	call := f.events.wait(t, "boss's tool.start", func(e agentfleet.Event) bool {
		return e.Agent == "boss" && e.Type == agentfleet.EventToolStart && e.ToolName == "ask_researcher"
	})
	bustest.Eventually(t, "boss's progress naming the child's waiting call", func() bool { return len(childApprovals(f)) > 0 })
	// A forged event on the child's approval subject, of another session:
	// not reported. (Undecodable ones are in TestWaiting's nil case; the
	// test's own event collector refuses them.)
	subject := "agent.events.researcher." + pending.Session + ".tool.approval"
	forged, _ := json.Marshal(agentfleet.Event{Type: agentfleet.EventToolApproval, Agent: "researcher", Session: "elsewhere",
		ToolCallID: "forged", ToolName: "danger", Decision: agentfleet.ApprovalPending})
	for _, data := range [][]byte{forged} {
		if err := f.nc.Publish(subject, data); err != nil {
			t.Fatal(err)
		}
	}
	if r := f.decide(t, "researcher", pending.Session, `{"tool_call_id":"`+pending.ToolCallID+`","approve":true}`); !r.OK {
		t.Fatalf("decision refused: %+v", r)
	}
	select {
	case got := <-answer:
		if want := `ask_researcher=danger=did {"x":1}`; got != want {
			t.Fatalf("boss answered %q, want %q", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("boss did not answer after the child's approval")
	}
	got := childApprovals(f)
	if len(got) != 2 {
		t.Fatalf("boss reported %d child approvals, want 2 (pending, approved): %v", len(got), got)
	}
	for i, decision := range []string{agentfleet.ApprovalPending, agentfleet.ApprovalApproved} {
		a := got[i]
		if a["agent"] != "researcher" || a["session"] != pending.Session || a["tool_call_id"] != pending.ToolCallID ||
			a["tool_name"] != "danger" || a["decision"] != decision || a["parent_call"] != call.ToolCallID || a["parent_tool"] != "ask_researcher" {
			t.Errorf("report %d = %v, want researcher's call %s in %s, %s, on boss's call %s", i, a, pending.ToolCallID, pending.Session, decision, call.ToolCallID)
		}
	}
}
