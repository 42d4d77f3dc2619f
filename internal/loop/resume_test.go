package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

func callMsg(ids ...string) *agentfleet.AssistantMessage {
	m := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, StopReason: agentfleet.StopReasonToolUse}
	for _, id := range ids {
		name, _, _ := strings.Cut(id, "#")
		m.Content = append(m.Content, agentfleet.Content{Type: agentfleet.ContentToolCall, ID: id, Name: name, Arguments: json.RawMessage(`{}`)})
	}
	return m
}

func result(id, text string) *agentfleet.ToolResultMessage {
	name, _, _ := strings.Cut(id, "#")
	return &agentfleet.ToolResultMessage{Role: agentfleet.RoleTool, ToolCallID: id, ToolName: name, Content: []agentfleet.Content{agentfleet.Text(text)}}
}

func answer(text string) *agentfleet.AssistantMessage {
	return &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text(text)}, StopReason: agentfleet.StopReasonStop}
}

// TestResumeSettlesOnlyItsOwnCalls resumes a run whose records are followed
// by those of another run (a history written before runs were resumed in
// order): only the resumed run's unanswered call runs, and the other run's
// unanswered call is left alone.
func TestResumeSettlesOnlyItsOwnCalls(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]int{}
	count := func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		mu.Lock()
		ran[c.ID]++
		mu.Unlock()
		return agentfleet.TextResult("ran " + c.ID), nil
	}
	safe := tool("safe", false, count)
	safe.Annotations.Idempotent = true
	a := agentfleet.NewUserMessage("a")
	b := agentfleet.NewUserMessage("b")
	history := append(entries("run-a", a, callMsg("safe#a1", "safe#a2"), result("safe#a1", "done a1")),
		entries("run-b", b, callMsg("safe#b1"))...)
	m := &script{steps: []step{say("answer a")}}
	s, _ := newSession(t, m, loop.Config{History: history}, safe)
	final := wait(t, s.Resume("run-a"))
	if final.RunID != "run-a" || agentfleet.JoinText(final.Content) != "answer a" {
		t.Errorf("final = %s %q", final.RunID, agentfleet.JoinText(final.Content))
	}
	if ran["safe#a2"] != 1 || ran["safe#a1"] != 0 || ran["safe#b1"] != 0 {
		t.Errorf("calls run: %v; want only safe#a2, once", ran)
	}
}

// TestResumeRunsUnexecutedCalls resumes a run whose two calls of a tool
// that is neither idempotent nor read-only have no result: the one the
// store knows never ran (it waited for approval) runs, the other gets the
// unknown-outcome result.
func TestResumeRunsUnexecutedCalls(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]int{}
	send := tool("send", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		mu.Lock()
		ran[c.ID]++
		mu.Unlock()
		return agentfleet.TextResult("sent"), nil
	})
	history := entries("run-1", agentfleet.NewUserMessage("q"), callMsg("send#1", "send#2"))
	m := &script{steps: []step{say("done")}}
	s, _ := newSession(t, m, loop.Config{History: history, Store: storeFuncs{unexecuted: func(id string) bool { return id == "send#1" }}}, send)
	if final := wait(t, s.Resume("run-1")); final == nil || agentfleet.JoinText(final.Content) != "done" {
		t.Fatalf("final = %+v", final)
	}
	if ran["send#1"] != 1 || ran["send#2"] != 0 {
		t.Errorf("calls run: %v; want send#1 once, send#2 not", ran)
	}
	results := map[string]string{}
	for _, h := range s.History() {
		if tr, ok := h.(*agentfleet.ToolResultMessage); ok {
			results[tr.ToolCallID] = agentfleet.JoinText(tr.Content)
		}
	}
	if results["send#1"] != "sent" || results["send#2"] != fmt.Sprintf(loop.UnknownOutcomeText, "send") {
		t.Errorf("results %q", results)
	}
}

// TestResumeWithStoredFinal resumes a run whose final answer was stored but
// not its end: it ends with that answer, without calling the model or any
// tool again.
func TestResumeWithStoredFinal(t *testing.T) {
	var ran int
	safe := tool("safe", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ran++
		return agentfleet.TextResult("again"), nil
	})
	safe.Annotations.Idempotent = true
	history := entries("run-1", agentfleet.NewUserMessage("q"), callMsg("safe#1"), result("safe#1", "once"), answer("the answer"))
	m := &script{}
	s, ev := newSession(t, m, loop.Config{History: history}, safe)
	final := wait(t, s.Resume("run-1"))
	if final.StopReason != agentfleet.StopReasonStop || agentfleet.JoinText(final.Content) != "the answer" || final.RunID != "run-1" {
		t.Errorf("final = %s %q %s", final.StopReason, agentfleet.JoinText(final.Content), final.RunID)
	}
	if m.calls() != 0 || ran != 0 {
		t.Errorf("model calls %d, tool runs %d; want none", m.calls(), ran)
	}
	if got, want := roles(s.History()), "user:q assistant tool:safe assistant"; got != want {
		t.Errorf("history = %s, want %s", got, want)
	}
	var types []string
	for _, e := range ev.list() {
		types = append(types, string(e.Type))
	}
	if got, want := strings.Join(types, " "), "run.resumed run.end"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
}

// TestResumeTerminatedBatch resumes a run whose every stored result asked to
// terminate: it ends as tool_use_terminated, without a model call.
func TestResumeTerminatedBatch(t *testing.T) {
	r := result("stop#1", "stopped")
	r.Terminate = true
	history := entries("run-1", agentfleet.NewUserMessage("q"), callMsg("stop#1"), r)
	m := &script{}
	s, _ := newSession(t, m, loop.Config{History: history}, tool("stop", false, text("x")))
	final := wait(t, s.Resume("run-1"))
	if final.StopReason != agentfleet.StopReasonToolTerminated || m.calls() != 0 {
		t.Errorf("final %s after %d model calls; want tool_use_terminated after none", final.StopReason, m.calls())
	}
}

// TestResumeKeepsTurnCount resumes a run that used its turns: it ends with
// max_turns instead of calling the model again.
func TestResumeKeepsTurnCount(t *testing.T) {
	safe := tool("safe", false, text("ok"))
	history := entries("run-1", agentfleet.NewUserMessage("q"),
		callMsg("safe#1"), result("safe#1", "ok"), callMsg("safe#2"), result("safe#2", "ok"))
	m := &script{}
	s, _ := newSession(t, m, loop.Config{History: history, MaxTurns: 2}, safe)
	if final := wait(t, s.Resume("run-1")); final.StopReason != agentfleet.StopReasonMaxTurns || m.calls() != 0 {
		t.Errorf("final %s after %d model calls; want max_turns after none", final.StopReason, m.calls())
	}
}

// TestResumeBeforeLaterInput queues a follow-up behind a resumed run: the
// resumed run ends first, and the follow-up gets a run of its own.
func TestResumeBeforeLaterInput(t *testing.T) {
	history := entries("run-1", agentfleet.NewUserMessage("first"))
	m := &script{steps: []step{say("one"), say("two")}}
	s, _ := newSession(t, m, loop.Config{History: history})
	r1 := s.Resume("run-1")
	r2 := s.Send(agentfleet.NewUserMessage("second"))
	if f := wait(t, r1); agentfleet.JoinText(f.Content) != "one" || f.RunID != "run-1" {
		t.Errorf("resumed run = %s %q", f.RunID, agentfleet.JoinText(f.Content))
	}
	if f := wait(t, r2); agentfleet.JoinText(f.Content) != "two" || f.RunID == "run-1" {
		t.Errorf("follow-up run = %s %q", f.RunID, agentfleet.JoinText(f.Content))
	}
	if got, want := roles(m.request(0).Messages), "user:first"; got != want {
		t.Errorf("the resumed run saw %s, want %s", got, want)
	}
}

// TestStoreFailureSuspends fails to store the model's response: the run is
// suspended (run.suspended, no run.end, the end never stored, the sink told
// of the suspension and of no end), the tools are
// not run, and the session takes no more input.
func TestStoreFailureSuspends(t *testing.T) {
	var ran int
	safe := tool("safe", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ran++
		return agentfleet.TextResult("ran"), nil
	})
	fenced := errors.New("fenced")
	var stored int
	stores := 0
	ev := &outcomes{events: &events{}}
	m := &script{steps: []step{use("safe {}"), say("never")}}
	s, _ := newSession(t, m, loop.Config{
		Store: storeFuncs{
			append: func(runID string, msg agentfleet.Message) error {
				stores++
				if _, ok := msg.(*agentfleet.AssistantMessage); ok {
					return fenced
				}
				return nil
			},
			end: func(*agentfleet.AssistantMessage) error { stored++; return nil },
		},
		Sink: ev,
	}, safe)
	if final := wait(t, s.Send(agentfleet.NewUserMessage("go"))); final != nil {
		t.Errorf("final = %+v, want nil for a suspended run", final)
	}
	ended, suspended := ev.counts()
	if ran != 0 || stored != 0 || ended != 0 || suspended != 1 {
		t.Errorf("tool runs %d, run ends stored %d, told %d, suspensions %d; want 0, 0, 0, 1", ran, stored, ended, suspended)
	}
	var last agentfleet.Event
	for _, e := range ev.list() {
		if e.Type == agentfleet.EventRunEnd {
			t.Error("a run.end for a suspended run")
		}
		last = e
	}
	if last.Type != agentfleet.EventRunSuspended || !strings.Contains(last.ErrorMessage, "fenced") {
		t.Errorf("last event = %s %q, want run.suspended naming the cause", last.Type, last.ErrorMessage)
	}
	if f := wait(t, s.Send(agentfleet.NewUserMessage("more"))); f != nil || m.calls() != 1 {
		t.Errorf("input after the suspension got %+v after %d model calls", f, m.calls())
	}
}

// TestSuspendStopsWithoutEnding suspends a run in a tool call: the call is
// cancelled, nothing more is stored, and the run ends without run.end.
func TestSuspendStopsWithoutEnding(t *testing.T) {
	inCall := make(chan struct{})
	block := tool("block", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		close(inCall)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	var mu sync.Mutex
	var stored []string
	m := &script{steps: []step{use("block {}"), say("never")}}
	s, ev := newSession(t, m, loop.Config{Store: storeFuncs{append: func(runID string, msg agentfleet.Message) error {
		mu.Lock()
		defer mu.Unlock()
		stored = append(stored, msg.MessageRole())
		return nil
	}}}, block)
	reply := s.Send(agentfleet.NewUserMessage("go"))
	<-inCall
	if !s.Suspend(errors.New("shutting down")) {
		t.Fatal("Suspend found no active run")
	}
	if f := wait(t, reply); f != nil {
		t.Errorf("final = %+v, want nil", f)
	}
	mu.Lock()
	got := strings.Join(stored, " ")
	mu.Unlock()
	if got != "user assistant" {
		t.Errorf("stored %s, want the user message and the response only", got)
	}
	for _, e := range ev.list() {
		if e.Type == agentfleet.EventRunEnd {
			t.Error("a run.end for a suspended run")
		}
	}
}

// TestResumeKeepsCallOrder resumes a run whose stored results came in the
// order the calls ended, with one missing: the model sees them in the order
// of the calls.
func TestResumeKeepsCallOrder(t *testing.T) {
	safe := tool("safe", false, text("two"))
	safe.Annotations.Idempotent = true
	history := entries("run-1", agentfleet.NewUserMessage("q"), callMsg("safe#1", "safe#2", "safe#3"),
		result("safe#3", "three"), result("safe#1", "one"))
	m := &script{steps: []step{say("done")}}
	s, _ := newSession(t, m, loop.Config{History: history}, safe)
	wait(t, s.Resume("run-1"))
	var got []string
	for _, msg := range m.request(0).Messages {
		if tr, ok := msg.(*agentfleet.ToolResultMessage); ok {
			got = append(got, tr.ToolCallID)
		}
	}
	if strings.Join(got, " ") != "safe#1 safe#2 safe#3" {
		t.Errorf("the model saw results %v, want them in call order", got)
	}
}
