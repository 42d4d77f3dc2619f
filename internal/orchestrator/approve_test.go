package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go/jetstream"
)

// danger is a destructive tool (neither idempotent nor read-only) that
// answers with its arguments and counts its calls.
func danger(calls *sync.Map) *agentfleet.Tool {
	return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "danger", Description: "test tool danger", Parallel: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`),
		Annotations: agentfleet.Annotations{Destructive: true}},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			b, _ := json.Marshal(c.Arguments)
			if calls != nil {
				n, _ := calls.LoadOrStore(string(b), new(int))
				*n.(*int)++
			}
			return agentfleet.TextResult("did " + string(b)), nil
		})}
}

// approvalFleet serves two agents: default asks approval for destructive
// tools with the default timeout, hasty for tools matching "dang*" with a
// timeout of 300ms.
func approvalFleet(t *testing.T, model *script) *testFleet {
	t.Helper()
	return startFleet(t, orchestrator.Config{Model: model, Durable: true, Profiles: []orchestrator.Profile{
		{Name: "default", ApproveDestructive: true},
		{Name: "hasty", Approve: []string{"dang*"}, ApprovalTimeout: "300ms"},
	}}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{danger(nil), echo("echo")}})
}

// decide publishes a decision as a request and decodes the reply.
func (f *testFleet) decide(t *testing.T, agent, session, payload string) agentfleet.ApprovalReply {
	t.Helper()
	m, err := f.nc.Request("agent.approve."+agent+"."+session, []byte(payload), 15*time.Second)
	if err != nil {
		t.Fatalf("decision on %s.%s: %v", agent, session, err)
	}
	var r agentfleet.ApprovalReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		t.Fatalf("decision reply does not decode: %v: %s", err, m.Data)
	}
	return r
}

// pendingApproval waits for the tool.approval event of a call of session
// that starts to wait.
func (f *testFleet) pendingApproval(t *testing.T, session string) agentfleet.Event {
	t.Helper()
	return f.events.wait(t, "tool.approval pending in "+session, func(e agentfleet.Event) bool {
		return e.Session == session && e.Type == agentfleet.EventToolApproval && e.Decision == agentfleet.ApprovalPending
	})
}

// callEvents returns the types of the events of one tool call, in order.
func (f *testFleet) callEvents(session, call string) string {
	var out []string
	for _, e := range f.events.list(func(e agentfleet.Event) bool {
		return e.Session == session && e.ToolCallID == call && e.Type != agentfleet.EventError
	}) {
		s := string(e.Type)
		if e.Decision != "" {
			s += ":" + e.Decision
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestApprovalDecisions runs a call that waits for approval through each
// way it can end: approved, rejected with a reason, approved with an edit,
// a bad edit (answered with an error; the call still waits, and is then
// approved), and the deadline. Each result goes back to the model; the
// call's events are tool.start, tool.approval pending, tool.approval with
// the decision, tool.end; the request and the decision are in the stored
// history.
func TestApprovalDecisions(t *testing.T) {
	cases := []struct {
		name, agent string
		decisions   []string // published in order; all but the last must fail
		wantErr     string   // of the failed decisions' replies
		result      string   // what the model sees
		decision    string
	}{
		{name: "approve", agent: "default", decisions: []string{`{"tool_call_id":"%s","approve":true}`},
			result: `danger=did {"x":1}`, decision: agentfleet.ApprovalApproved},
		{name: "reject", agent: "default", decisions: []string{`{"tool_call_id":"%s","approve":false,"reason":"not on a Friday"}`},
			result: "danger=Tool danger: the call was rejected: not on a Friday", decision: agentfleet.ApprovalRejected},
		{name: "edit", agent: "default", decisions: []string{`{"tool_call_id":"%s","approve":true,"arguments":{"x":2}}`},
			result: `danger=did {"x":2}`, decision: agentfleet.ApprovalApproved},
		{name: "badedit", agent: "default", decisions: []string{`{"tool_call_id":"%s","approve":true,"arguments":{"x":"two"}}`, `{"tool_call_id":"%s","approve":true,"arguments":{"x":3}}`},
			wantErr: "do not fit tool danger", result: `danger=did {"x":3}`, decision: agentfleet.ApprovalApproved},
		{name: "timeout", agent: "hasty", result: "danger=Tool danger: not approved in time: no decision within 300ms", decision: agentfleet.ApprovalTimedOut},
	}
	model := newScript()
	for _, c := range cases {
		model.on(c.name, use(`danger {"x":1}`), sayResults())
	}
	f := approvalFleet(t, model)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := outs(t, f.nc, c.agent, c.name)
			publish(t, f.nc, "agent.in."+c.agent+"."+c.name, "", `{"content":"do it","id":"m-`+c.name+`"}`)
			e := f.pendingApproval(t, c.name)
			if e.ToolName != "danger" || e.Deadline == nil || e.Annotations == nil || !e.Annotations.Destructive || e.Arguments["x"] != 1.0 {
				t.Errorf("tool.approval = %+v, want danger's call with its arguments, annotations and a deadline", e)
			}
			for i, d := range c.decisions {
				r := f.decide(t, c.agent, c.name, fmt.Sprintf(d, e.ToolCallID))
				if last := i == len(c.decisions)-1; last != r.OK || !last && !strings.Contains(r.Error, c.wantErr) {
					t.Errorf("reply to decision %d = %+v", i+1, r)
				}
			}
			final := next(t, out)
			if got := agentfleet.JoinText(final.Content); got != c.result {
				t.Errorf("answer = %q, want %q", got, c.result)
			}
			want := "tool.start tool.approval:pending tool.approval:" + c.decision + " tool.end"
			bustest.Eventually(t, "the call's tool.end", func() bool { return f.callEvents(c.name, e.ToolCallID) == want })
			st := loadHistory(t, f.nc, c.agent, c.name)
			var reqs, decs int
			for _, r := range st.Records {
				if r.Approval != nil && r.Approval.ToolCallID == e.ToolCallID {
					reqs++
				}
				if r.Decision != nil && r.Decision.ToolCallID == e.ToolCallID {
					decs++
					if r.Decision.Outcome() != c.decision {
						t.Errorf("stored decision = %s, want %s", r.Decision.Outcome(), c.decision)
					}
				}
			}
			if reqs != 1 || decs != 1 {
				t.Errorf("history holds %d requests and %d decisions of the call, want 1 of each", reqs, decs)
			}
		})
	}
}

// TestApprovalRace sends two decisions on one call at once: exactly one
// wins, and the other's reply names the winning decision.
func TestApprovalRace(t *testing.T) {
	f := approvalFleet(t, newScript().on("race", use(`danger {"x":1}`), sayResults()))
	out := outs(t, f.nc, "default", "race")
	publish(t, f.nc, "agent.in.default.race", "", `{"content":"do it"}`)
	e := f.pendingApproval(t, "race")
	replies := make([]agentfleet.ApprovalReply, 2)
	var wg sync.WaitGroup
	for i, approve := range []bool{true, false} {
		wg.Go(func() {
			replies[i] = f.decide(t, "default", "race", fmt.Sprintf(`{"tool_call_id":%q,"approve":%v,"reason":"racer %d"}`, e.ToolCallID, approve, i))
		})
	}
	wg.Wait()
	win, lose := replies[0], replies[1]
	if !win.OK {
		win, lose = lose, win
	}
	if !win.OK || lose.OK {
		t.Fatalf("replies = %+v, want exactly one ok", replies)
	}
	if lose.DecisionID != win.DecisionID || lose.Decision != win.Decision || !strings.Contains(lose.Error, "already decided: "+win.Decision+" by decision "+win.DecisionID) {
		t.Errorf("losing reply = %+v, want it to name the winner %+v", lose, win)
	}
	final := next(t, out)
	want := `danger=did {"x":1}`
	if win.Decision == agentfleet.ApprovalRejected {
		want = "danger=Tool danger: the call was rejected: racer 1"
	}
	if got := agentfleet.JoinText(final.Content); got != want {
		t.Errorf("answer = %q, want %q (the winner's)", got, want)
	}
}

// TestApprovalParallelBatch runs a parallel batch of two calls of which
// one needs approval: the other runs at once, and ends before the
// decision; the batch then runs the approved one.
func TestApprovalParallelBatch(t *testing.T) {
	f := approvalFleet(t, newScript().on("batch", use(`danger {"x":1}`, `echo {"y":2}`), sayResults()))
	out := outs(t, f.nc, "default", "batch")
	publish(t, f.nc, "agent.in.default.batch", "", `{"content":"both"}`)
	e := f.pendingApproval(t, "batch")
	f.events.wait(t, "echo's tool.end while danger waits", func(e agentfleet.Event) bool {
		return e.Session == "batch" && e.Type == agentfleet.EventToolEnd && e.ToolName == "echo"
	})
	if r := f.decide(t, "default", "batch", fmt.Sprintf(`{"tool_call_id":%q,"approve":true}`, e.ToolCallID)); !r.OK {
		t.Fatalf("approve: %+v", r)
	}
	final := next(t, out)
	if got, want := agentfleet.JoinText(final.Content), `danger=did {"x":1}; echo=echo{"y":2}`; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
}

// TestApprovalAbort aborts a run while its call waits: the run ends
// aborted, the call never runs, and a later decision hears that the call
// no longer waits.
func TestApprovalAbort(t *testing.T) {
	var calls sync.Map
	f := startFleet(t, orchestrator.Config{Model: newScript().on("abort", use(`danger {"x":1}`), sayResults()), Durable: true,
		Profiles: []orchestrator.Profile{{Name: "default", Approve: []string{"danger"}}}},
		toolrpc.ServerConfig{Tools: []*agentfleet.Tool{danger(&calls)}})
	out := outs(t, f.nc, "default", "abort")
	publish(t, f.nc, "agent.in.default.abort", "", `{"content":"do it"}`)
	e := f.pendingApproval(t, "abort")
	if _, err := f.nc.Request("agent.abort.default.abort", []byte(`{"reason":"changed my mind"}`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	final := next(t, out)
	if final.StopReason != agentfleet.StopReasonAborted {
		t.Errorf("stop reason = %s, want aborted", final.StopReason)
	}
	r := f.decide(t, "default", "abort", fmt.Sprintf(`{"tool_call_id":%q,"approve":true}`, e.ToolCallID))
	if r.OK || !strings.Contains(r.Error, "no longer waits for approval: its run was aborted") {
		t.Errorf("decision after the abort: %+v", r)
	}
	calls.Range(func(k, _ any) bool { t.Errorf("danger ran with %v", k); return true })
}

// TestApprovalBadDecisions sends decisions that cannot be taken: each
// reply says what is wrong.
func TestApprovalBadDecisions(t *testing.T) {
	f := approvalFleet(t, newScript())
	for _, c := range []struct{ name, subject, payload, want string }{
		{"bad json", "agent.approve.default.s", `{"tool_call_id":`, "decision payload is not a valid object"},
		{"no approve", "agent.approve.default.s", `{"tool_call_id":"c1"}`, `decision payload has no "approve"`},
		{"unknown field", "agent.approve.default.s", `{"tool_call_id":"c1","approve":true,"aprove":true}`, `unknown field "aprove"`},
		{"unknown call", "agent.approve.default.s", `{"tool_call_id":"nope","approve":true}`, `no tool call "nope" waits for approval`},
		{"bad token", "agent.approve.default.s$1", `{"tool_call_id":"c1","approve":true}`, `session name "s$1" may hold only`},
		{"unknown agent", "agent.approve.ghost.s", `{"tool_call_id":"c1","approve":true}`, `unknown agent "ghost"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := f.nc.Request(c.subject, []byte(c.payload), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var r agentfleet.ApprovalReply
			if err := json.Unmarshal(m.Data, &r); err != nil {
				t.Fatalf("reply %s: %v", m.Data, err)
			}
			if r.OK || !strings.Contains(r.Error, c.want) {
				t.Errorf("reply = %+v, want an error with %q", r, c.want)
			}
			// One error event each, though the decision reached the
			// owner twice (relayed with the reply, and kept without).
			f.events.wait(t, "naming "+c.want, func(e agentfleet.Event) bool {
				return e.Type == agentfleet.EventError && strings.Contains(e.ErrorMessage, c.want)
			})
		})
	}
	js, _ := jetstream.New(f.nc)
	stream, _ := js.Stream(context.Background(), "AGENT_INPUT")
	bustest.Eventually(t, "no decision left in the input stream", func() bool {
		info, err := stream.Info(context.Background(), jetstream.WithSubjectFilter("agent.>"))
		return err == nil && len(info.State.Subjects) == 0
	})
	for _, want := range []string{`unknown field "aprove"`, `decision payload has no "approve"`, `no tool call "nope" waits`, `session name "s$1"`, `unknown agent "ghost"`} {
		if n := len(f.events.list(func(e agentfleet.Event) bool {
			return e.Type == agentfleet.EventError && strings.Contains(e.ErrorMessage, want)
		})); n != 1 {
			t.Errorf("%d error events naming %q, want 1", n, want)
		}
	}
}

// TestApprovalDirectCall runs a tool that needs approval outside any run
// (as agentctl mcp does): it is refused, and never runs.
func TestApprovalDirectCall(t *testing.T) {
	var calls sync.Map
	f := startFleet(t, orchestrator.Config{Model: newScript(), Durable: true,
		Profiles: []orchestrator.Profile{{Name: "default", ApproveDestructive: true}}},
		toolrpc.ServerConfig{Tools: []*agentfleet.Tool{danger(&calls)}})
	bustest.Eventually(t, "the danger tool", func() bool { _, ok := find(f.orch, "default", "danger"); return ok })
	out, err := f.orch.CallTool(context.Background(), "default", "direct", agentfleet.ToolCall{Name: "danger", Arguments: map[string]any{"x": 1.0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.IsError || !strings.Contains(agentfleet.JoinText(out.Result.Content), "need a person's approval") {
		t.Errorf("direct call = %+v %q, want it refused", out.Kind, agentfleet.JoinText(out.Result.Content))
	}
	calls.Range(func(k, _ any) bool { t.Errorf("danger ran with %v", k); return true })
}
