package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/delegate"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go"
)

// team is the model of every agent of the delegation tests. It reads the
// last user message:
//
//   - "via a b: text" asks agent a "via b: text" (ask_a), and so on down
//     the list; "via : text" or "text" is the last agent's own;
//   - "fan a b: text" asks a and b the text in one batch;
//   - "continue s: text" asks researcher the text in its session s;
//   - "fail" fails the model call;
//   - "hang" blocks until the call is canceled;
//   - "meet" blocks until two calls meet, or the call is canceled;
//   - anything else is answered "<agent> heard: <text>".
//
// After tool results it answers with them, "name=text", or "name!text" for
// an error result, joined by " | ".
type team struct {
	mu      sync.Mutex
	meeting int
	met     chan struct{}
	hangs   chan string // the agents that began to hang
}

func newTeam() *team { return &team{met: make(chan struct{}), hangs: make(chan string, 16)} }

func (tm *team) Complete(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	var results []string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		tr, ok := req.Messages[i].(*agentfleet.ToolResultMessage)
		if !ok {
			break
		}
		sep := "="
		if tr.IsError {
			sep = "!"
		}
		results = append([]string{tr.ToolName + sep + agentfleet.JoinText(tr.Content)}, results...)
	}
	if len(results) > 0 {
		return say(strings.Join(results, " | "))(req), nil
	}
	text := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if u, ok := req.Messages[i].(*agentfleet.UserMessage); ok {
			text = agentfleet.JoinText(u.Content)
			break
		}
	}
	call := func(targets []string, msg func(i int) string) *agentfleet.AssistantMessage {
		var calls []string
		for i, a := range targets {
			b, _ := json.Marshal(map[string]string{"message": msg(i)})
			calls = append(calls, "ask_"+a+" "+string(b))
		}
		return use(calls...)(req)
	}
	if rest, ok := strings.CutPrefix(text, "via "); ok {
		list, msg, _ := strings.Cut(rest, ": ")
		hops := strings.Fields(list)
		if len(hops) > 0 {
			return call(hops[:1], func(int) string {
				if len(hops) == 1 {
					return msg
				}
				return "via " + strings.Join(hops[1:], " ") + ": " + msg
			}), nil
		}
		text = msg
	}
	if rest, ok := strings.CutPrefix(text, "continue "); ok {
		session, msg, _ := strings.Cut(rest, ": ")
		b, _ := json.Marshal(map[string]string{"message": msg, "session": session})
		return use("ask_researcher " + string(b))(req), nil
	}
	if rest, ok := strings.CutPrefix(text, "fan "); ok {
		list, msg, _ := strings.Cut(rest, ": ")
		return call(strings.Fields(list), func(int) string { return msg }), nil
	}
	switch text {
	case "fail":
		return nil, errors.New("team: the model of " + req.Agent + " failed")
	case "hang":
		tm.hangs <- req.Agent
		<-ctx.Done()
		return nil, ctx.Err()
	case "meet":
		tm.mu.Lock()
		if tm.meeting++; tm.meeting == 2 {
			close(tm.met)
		}
		tm.mu.Unlock()
		select {
		case <-tm.met:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return say(req.Agent + " heard: " + text)(req), nil
}

// teamFleet starts one orchestrator of profiles, all answered by a team.
func teamFleet(t *testing.T, durable bool, profiles ...orchestrator.Profile) (*testFleet, *team) {
	t.Helper()
	tm := newTeam()
	return startFleet(t, orchestrator.Config{Model: tm, Durable: durable, Profiles: profiles}), tm
}

func runStart(f *testFleet, agent string) func(agentfleet.Event) bool {
	return func(e agentfleet.Event) bool { return e.Type == agentfleet.EventRunStart && e.Agent == agent }
}

// TestAgentAsTool: a profile's agents are tools ask_<name>; a call runs the
// child in a session derived from the call, its final message is the
// result, and every event of the child's run names the parent's agent,
// session, run and call, with the chain.
func TestAgentAsTool(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(mode(durable), func(t *testing.T) {
			f, _ := teamFleet(t, durable,
				orchestrator.Profile{Name: "boss", Agents: []string{"researcher", "coder"}},
				orchestrator.Profile{Name: "researcher"}, orchestrator.Profile{Name: "coder"})
			def, ok := find(f.orch, "boss", "ask_researcher")
			if _, also := find(f.orch, "boss", "ask_coder"); !ok || !also {
				t.Fatalf("boss's tools lack ask_researcher or ask_coder")
			}
			if !strings.Contains(string(def.InputSchema), `"message"`) || !strings.Contains(string(def.InputSchema), `"session"`) || !def.Annotations.Idempotent {
				t.Errorf("ask_researcher = %+v %s", def, def.InputSchema)
			}
			if _, ok := find(f.orch, "researcher", "ask_boss"); ok {
				t.Errorf("researcher has ask_boss without listing boss")
			}
			final := f.ask(t, "boss", "s1", `{"content":"via researcher: find trees"}`)
			if got, want := agentfleet.JoinText(final.Content), "ask_researcher=researcher heard: find trees"; got != want {
				t.Fatalf("boss answered %q, want %q", got, want)
			}
			parentStart := f.events.wait(t, "boss's run.start", runStart(f, "boss"))
			childEnd := f.events.wait(t, "researcher's run.end", func(e agentfleet.Event) bool {
				return e.Type == agentfleet.EventRunEnd && e.Agent == "researcher"
			})
			call := f.events.wait(t, "boss's tool.start", func(e agentfleet.Event) bool {
				return e.Type == agentfleet.EventToolStart && e.Agent == "boss"
			})
			want := agentfleet.Parent{Agent: "boss", Session: "s1", RunID: parentStart.RunID, ToolCallID: call.ToolCallID, Chain: []string{"boss"}}
			if s := delegate.ChildSession(&want); childEnd.Session != s {
				t.Errorf("child session %s, want %s", childEnd.Session, s)
			}
			child := f.events.list(func(e agentfleet.Event) bool { return e.Agent == "researcher" })
			kinds := map[agentfleet.EventType]bool{}
			for _, e := range child {
				kinds[e.Type] = true
				if e.Parent == nil || e.Parent.Agent != want.Agent || e.Parent.Session != want.Session || e.Parent.RunID != want.RunID ||
					e.Parent.ToolCallID != want.ToolCallID || strings.Join(e.Parent.Chain, ",") != "boss" {
					t.Errorf("child event %s has parent %+v, want %+v", e.Type, e.Parent, want)
				}
			}
			if !kinds[agentfleet.EventRunStart] || !kinds[agentfleet.EventRunEnd] {
				t.Errorf("child events %v lack run.start or run.end", kinds)
			}
			for _, e := range f.events.list(func(e agentfleet.Event) bool { return e.Agent == "boss" }) {
				if e.Parent != nil {
					t.Errorf("the client's run has a parent on %s: %+v", e.Type, e.Parent)
				}
			}
			// The call's result links the child run.
			end := f.events.wait(t, "boss's tool.end", func(e agentfleet.Event) bool {
				return e.Type == agentfleet.EventToolEnd && e.Agent == "boss"
			})
			if end.IsError || end.Result == nil || end.Result.Details["session"] != childEnd.Session || end.Result.Details["run_id"] != childEnd.RunID {
				t.Errorf("tool.end = error %v, result %+v", end.IsError, end.Result)
			}
			// Given a session an earlier call returned, the call continues
			// it, from another parent session too; given one of a client's,
			// it is refused.
			final = f.ask(t, "boss", "s2", `{"content":"continue `+childEnd.Session+`: again"}`)
			if got := agentfleet.JoinText(final.Content); got != "ask_researcher=researcher heard: again" {
				t.Errorf("continued: %q", got)
			}
			bustest.Eventually(t, "the second run of the child session", func() bool {
				return len(f.events.list(func(e agentfleet.Event) bool {
					return e.Type == agentfleet.EventRunStart && e.Session == childEnd.Session && e.Parent != nil && e.Parent.Session == "s2"
				})) == 1
			})
			final = f.ask(t, "boss", "s3", `{"content":"continue alice: hello"}`)
			if got := agentfleet.JoinText(final.Content); !strings.HasPrefix(got, `ask_researcher!Tool ask_researcher: argument session "alice" is not a session that an earlier call returned`) {
				t.Errorf("a client's session: %q", got)
			}
		})
	}
}

// TestAgentsInOneBatch: two children of one parallel batch run at once
// (each waits until the other has begun).
func TestAgentsInOneBatch(t *testing.T) {
	f, _ := teamFleet(t, true,
		orchestrator.Profile{Name: "boss", Agents: []string{"researcher", "coder"}},
		orchestrator.Profile{Name: "researcher"}, orchestrator.Profile{Name: "coder"})
	final := f.ask(t, "boss", "s", `{"content":"fan researcher coder: meet"}`)
	if got, want := agentfleet.JoinText(final.Content), "ask_researcher=researcher heard: meet | ask_coder=coder heard: meet"; got != want {
		t.Errorf("boss answered %q, want %q", got, want)
	}
}

// TestChildFails: a child whose model fails, one that does not answer in
// time (aborted then), and a parent aborted while its child runs (the
// child is aborted too): each gives the parent an error result, never a
// hang.
func TestChildFails(t *testing.T) {
	f, _ := teamFleet(t, true,
		orchestrator.Profile{Name: "boss", Agents: []string{"researcher"}, AgentTimeout: "300ms"},
		orchestrator.Profile{Name: "patient", Agents: []string{"researcher"}},
		orchestrator.Profile{Name: "researcher"})
	t.Run("model fails", func(t *testing.T) {
		got := agentfleet.JoinText(f.ask(t, "boss", "fails", `{"content":"via researcher: fail"}`).Content)
		if !strings.HasPrefix(got, "ask_researcher!agent researcher stopped with error: ") || !strings.Contains(got, "the model of researcher failed") {
			t.Errorf("boss answered %q", got)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		got := agentfleet.JoinText(f.ask(t, "boss", "slow", `{"content":"via researcher: hang"}`).Content)
		if !strings.HasPrefix(got, "ask_researcher!Tool ask_researcher: tool call timed out") && !strings.Contains(got, "did not answer call") {
			t.Errorf("boss answered %q", got)
		}
		end := f.events.wait(t, "the child's run.end", func(e agentfleet.Event) bool {
			return e.Type == agentfleet.EventRunEnd && e.Agent == "researcher" && e.Parent != nil && e.Parent.Session == "slow"
		})
		if end.StopReason != agentfleet.StopReasonAborted || !strings.Contains(end.Message.ErrorMessage, "did not answer call") {
			t.Errorf("child run.end %s %q, want aborted for the timeout", end.StopReason, end.Message.ErrorMessage)
		}
	})
	t.Run("parent aborted", func(t *testing.T) {
		done := make(chan *agentfleet.AssistantMessage, 1)
		go func() {
			m, err := f.nc.Request("agent.ask.patient.p", []byte(`{"content":"via researcher: hang"}`), 15*time.Second)
			var a agentfleet.AssistantMessage
			if err == nil {
				json.Unmarshal(m.Data, &a)
			}
			done <- &a
		}()
		f.events.wait(t, "the child's model call", func(e agentfleet.Event) bool {
			return e.Type == agentfleet.EventMessageStart && e.Agent == "researcher" && e.Parent != nil && e.Parent.Session == "p"
		})
		if _, err := f.nc.Request("agent.abort.patient.p", []byte(`{"reason":"enough"}`), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if parent := <-done; parent.StopReason != agentfleet.StopReasonAborted {
			t.Errorf("parent stopped with %s, want aborted", parent.StopReason)
		}
		end := f.events.wait(t, "the child's run.end", func(e agentfleet.Event) bool {
			return e.Type == agentfleet.EventRunEnd && e.Agent == "researcher" && e.Parent != nil && e.Parent.Session == "p"
		})
		if end.StopReason != agentfleet.StopReasonAborted || !strings.Contains(end.Message.ErrorMessage, "of agent patient that asked it") {
			t.Errorf("child run.end %s %q, want aborted for its parent", end.StopReason, end.Message.ErrorMessage)
		}
	})
}

// TestDelegationBounds: a chain deeper than the limit and a cycle are
// refused with an error result naming the chain, and start no run.
func TestDelegationBounds(t *testing.T) {
	f, _ := teamFleet(t, false,
		orchestrator.Profile{Name: "a", Agents: []string{"b"}}, orchestrator.Profile{Name: "b", Agents: []string{"c", "a"}},
		orchestrator.Profile{Name: "c", Agents: []string{"d"}}, orchestrator.Profile{Name: "d", Agents: []string{"e"}},
		orchestrator.Profile{Name: "e"})
	got := agentfleet.JoinText(f.ask(t, "a", "deep", `{"content":"via b c d: fine"}`).Content)
	if want := "ask_b=ask_c=ask_d=d heard: fine"; got != want {
		t.Errorf("three deep: %q, want %q", got, want)
	}
	got = agentfleet.JoinText(f.ask(t, "a", "deeper", `{"content":"via b c d e: too far"}`).Content)
	if want := "ask_b=ask_c=ask_d=ask_e!Tool ask_e: refused: asking agent e would nest delegations 4 deep (a → b → c → d → e), the limit is 3"; got != want {
		t.Errorf("four deep: %q, want %q", got, want)
	}
	got = agentfleet.JoinText(f.ask(t, "a", "cycle", `{"content":"via b a: round"}`).Content)
	if want := "ask_b=ask_a!Tool ask_a: refused: agent a is already waiting in this delegation (a → b → a), so asking it would be a cycle"; got != want {
		t.Errorf("cycle: %q, want %q", got, want)
	}
	// Events go out before the answer, but on their own way: wait for them.
	bustest.Eventually(t, "the 3 runs of a asked by the client", func() bool { return len(f.events.list(runStart(f, "a"))) == 3 })
	if n := len(f.events.list(runStart(f, "a"))); n != 3 {
		t.Errorf("%d runs of a, want the 3 asked by the client", n)
	}
	if n := len(f.events.list(runStart(f, "e"))); n != 0 {
		t.Errorf("%d runs of e, want none", n)
	}
}

// TestForgedParentHeaders: an ask's parent headers are checked as hostile
// input. Malformed ones, a chain too deep and a cycle are refused with an
// answer that names the header; a well-formed forged parent is only a
// label on the run's events: it runs in the session the client named, and
// answers on the client's reply subject.
func TestForgedParentHeaders(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(mode(durable), func(t *testing.T) {
			f, _ := teamFleet(t, durable, orchestrator.Profile{Name: "boss", Agents: []string{"researcher"}}, orchestrator.Profile{Name: "researcher"})
			good := delegate.Encode(&agentfleet.Parent{Agent: "boss", Session: "s", RunID: "r", ToolCallID: "c", Chain: []string{"boss"}})
			with := func(k, v string) map[string]string {
				h := map[string]string{}
				for a, b := range good {
					h[a] = b
				}
				h[k] = v
				return h
			}
			for i, tc := range []struct {
				name   string
				header map[string]string
				want   string
			}{
				{"one header alone", map[string]string{delegate.HeaderRun: "r"}, "header Agentfleet-Parent-Agent is missing"},
				{"bad session", with(delegate.HeaderSession, "a.*"), `header Agentfleet-Parent-Session: session name "a.*" may hold only`},
				{"oversized call id", with(delegate.HeaderCall, strings.Repeat("x", 5000)), "header Agentfleet-Parent-Call: 5000 bytes long, the limit is 256"},
				{"garbage bytes", with(delegate.HeaderRun, "\xff\xfe"), `header Agentfleet-Parent-Run: byte 1 is 0xff`},
				{"chain too long", with(delegate.HeaderChain, strings.Repeat("x,", 40)+"boss"), "header Agentfleet-Parent-Chain names 41 agents, the limit is 16"},
				{"chain too deep", with(delegate.HeaderChain, "a,b,c,boss"), "header Agentfleet-Parent-Chain: the delegation a → b → c → boss → researcher is 4 deep, the limit is 3"},
				{"cycle", with(delegate.HeaderChain, "researcher,boss"), "header Agentfleet-Parent-Chain: agent researcher is already waiting in the delegation researcher → boss"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					m := natsMsg("agent.ask.researcher.h"+fmt.Sprint(i), `{"content":"hi"}`, tc.header)
					reply, err := f.nc.RequestMsg(m, 10*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					var a agentfleet.AssistantMessage
					json.Unmarshal(reply.Data, &a)
					if a.StopReason != agentfleet.StopReasonError || !strings.Contains(a.ErrorMessage, tc.want) {
						t.Errorf("answer %s %q, want an error with %q", a.StopReason, a.ErrorMessage, tc.want)
					}
				})
			}
			// A well-formed forged parent labels the run and nothing more.
			reply, err := f.nc.RequestMsg(natsMsg("agent.ask.researcher.forged", `{"content":"hi"}`, good), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var a agentfleet.AssistantMessage
			json.Unmarshal(reply.Data, &a)
			if got := agentfleet.JoinText(a.Content); got != "researcher heard: hi" {
				t.Errorf("forged parent: answer %q", got)
			}
			start := f.events.wait(t, "run.start of forged", func(e agentfleet.Event) bool {
				return e.Type == agentfleet.EventRunStart && e.Session == "forged"
			})
			if start.Parent == nil || start.Parent.Session != "s" {
				t.Errorf("run.start parent %+v, want the label sent", start.Parent)
			}
			if n := len(f.events.list(func(e agentfleet.Event) bool { return e.Agent == "boss" })); n != 0 {
				t.Errorf("%d events of the claimed parent boss, want none", n)
			}
			// Parent headers are for asks only.
			if err := f.nc.PublishMsg(natsMsg("agent.in.researcher.in1", `{"content":"hi"}`, good)); err != nil {
				t.Fatal(err)
			}
			f.events.wait(t, "the error event of an in with parent headers", func(e agentfleet.Event) bool {
				return e.Type == agentfleet.EventError && e.Session == "in1" && strings.Contains(e.ErrorMessage, "header Agentfleet-Parent-Agent is for asks only, not for in")
			})
		})
	}
}

// TestAgentAsToolTwoOrchestrators: with two orchestrators sharing the
// sessions, every call is answered once, whichever owns the child's
// session, and each child session has one run.
func TestAgentAsToolTwoOrchestrators(t *testing.T) {
	profiles := []orchestrator.Profile{{Name: "boss", Agents: []string{"researcher"}}, {Name: "researcher"}}
	f, _ := teamFleet(t, true, profiles...)
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: newTeam(), Durable: true, Profiles: profiles, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o2.Close(ctx)
	})
	bustest.Eventually(t, "both orchestrators own partitions", func() bool {
		return len(f.orch.Partitions()) > 0 && len(o2.Partitions()) > 0
	})
	const n = 8
	for i := range n {
		s := fmt.Sprintf("two%d", i)
		if got, want := agentfleet.JoinText(f.ask(t, "boss", s, `{"content":"via researcher: q`+fmt.Sprint(i)+`"}`).Content), "ask_researcher=researcher heard: q"+fmt.Sprint(i); got != want {
			t.Errorf("%s: %q, want %q", s, got, want)
		}
	}
	bustest.Eventually(t, "a run.start of each child", func() bool { return len(f.events.list(runStart(f, "researcher"))) >= n })
	orchs := map[string]bool{}
	children := map[string]int{}
	for _, e := range f.events.list(runStart(f, "researcher")) {
		children[e.Session]++
		orchs[e.Orchestrator] = true
	}
	if len(children) != n {
		t.Errorf("%d child sessions, want %d", len(children), n)
	}
	for s, k := range children {
		if k != 1 {
			t.Errorf("child session %s ran %d times", s, k)
		}
	}
	t.Logf("child runs on %d orchestrators", len(orchs))
}

// natsMsg is a message on subject with the headers h.
func natsMsg(subject, data string, h map[string]string) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = []byte(data)
	for k, v := range h {
		m.Header.Set(k, v)
	}
	return m
}

// TestAskToolCalledDirectly: a call of an ask tool outside any run (an MCP
// client's agent.call) is refused, not sent to workers that have no such
// tool.
func TestAskToolCalledDirectly(t *testing.T) {
	f, _ := teamFleet(t, false, orchestrator.Profile{Name: "boss", Agents: []string{"researcher"}}, orchestrator.Profile{Name: "researcher"})
	out, err := f.orch.CallTool(context.Background(), "boss", "direct", agentfleet.ToolCall{Name: "ask_researcher", Arguments: map[string]any{"message": "hi"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := agentfleet.JoinText(out.Result.Content); !out.IsError || !strings.Contains(got, "Tool ask_researcher asks agent researcher on behalf of a run") {
		t.Errorf("direct call: error %v, %q", out.IsError, got)
	}
}

// TestAskStoredBeforeTheChild: with JetStream, the parent's message that
// calls an ask tool is in its stored history by the time the child runs,
// although the tool may run again: a resumed parent must ask again with the
// same call id, not have its model make a new call (and a second child).
func TestAskStoredBeforeTheChild(t *testing.T) {
	f, _ := teamFleet(t, true, orchestrator.Profile{Name: "boss", Agents: []string{"researcher"}}, orchestrator.Profile{Name: "researcher"})
	go f.nc.Request("agent.ask.boss.stored", []byte(`{"content":"via researcher: hang"}`), 15*time.Second)
	f.events.wait(t, "the child's model call", func(e agentfleet.Event) bool {
		return e.Type == agentfleet.EventMessageStart && e.Agent == "researcher" && e.Parent != nil && e.Parent.Session == "stored"
	})
	found := false
	for _, m := range loadHistory(t, f.nc, "boss", "stored").Messages() {
		if a, ok := m.(*agentfleet.AssistantMessage); ok {
			for _, c := range a.ToolCalls() {
				found = found || c.Name == "ask_researcher"
			}
		}
	}
	if !found {
		t.Errorf("the parent's call of ask_researcher is not stored while its child runs")
	}
	if _, err := f.nc.Request("agent.abort.boss.stored", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	f.events.wait(t, "the child's run.end", func(e agentfleet.Event) bool {
		return e.Type == agentfleet.EventRunEnd && e.Agent == "researcher"
	})
	for _, e := range f.events.list(func(e agentfleet.Event) bool { return e.Type == agentfleet.EventError }) {
		t.Logf("error event %s/%s: %s", e.Agent, e.Session, e.ErrorMessage)
	}
}
