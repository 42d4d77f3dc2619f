package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

var update = flag.Bool("update", false, "rewrite golden files")

// step answers one model call.
type step func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error)

// script is a model that answers with its steps in order and records every
// request.
type script struct {
	mu       sync.Mutex
	steps    []step
	requests []*loop.Request
}

func (s *script) Complete(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if n >= len(s.steps) {
		return nil, fmt.Errorf("script: no step for call %d", n+1)
	}
	return s.steps[n](ctx, req, onDelta)
}

func (s *script) request(i int) *loop.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i]
}

func (s *script) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func say(text string) step {
	return func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		for _, w := range strings.SplitAfter(text, " ") {
			onDelta(w)
		}
		return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text(text)}, Model: "scripted", StopReason: agentfleet.StopReasonStop,
			Usage: &agentfleet.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}, nil
	}
}

// use asks for tool calls given as "name {json}" in tool_call blocks.
func use(calls ...string) step {
	return func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		m := &agentfleet.AssistantMessage{Model: "scripted", StopReason: agentfleet.StopReasonToolUse}
		for i, c := range calls {
			name, args, _ := strings.Cut(c, " ")
			m.Content = append(m.Content, agentfleet.Content{Type: agentfleet.ContentToolCall, ID: fmt.Sprintf("call_%d_%d", len(req.Messages), i), Name: name, Arguments: json.RawMessage(args)})
		}
		return m, nil
	}
}

func then(s step, before func()) step {
	return func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		before()
		return s(ctx, req, onDelta)
	}
}

// events records the session's events.
type events struct {
	mu  sync.Mutex
	all []agentfleet.Event
}

func (e *events) Emit(ev *agentfleet.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, *ev)
}

func (e *events) list() []agentfleet.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agentfleet.Event(nil), e.all...)
}

// transcript renders the events without times and ids, one per line.
func (e *events) transcript() string {
	var b strings.Builder
	for _, ev := range e.list() {
		fmt.Fprintf(&b, "%d turn=%d %s", ev.Seq, ev.Turn, ev.Type)
		if ev.ToolName != "" {
			fmt.Fprintf(&b, " %s", ev.ToolName)
		}
		if ev.Delta != "" {
			fmt.Fprintf(&b, " %q", ev.Delta)
		}
		if ev.Partial != nil {
			fmt.Fprintf(&b, " partial=%v", ev.Partial)
		}
		if ev.Type == agentfleet.EventToolEnd {
			fmt.Fprintf(&b, " is_error=%v %q", ev.IsError, agentfleet.JoinText(ev.Result.Content))
		}
		if ev.StopReason != "" {
			fmt.Fprintf(&b, " %s", ev.StopReason)
		}
		if ev.ErrorMessage != "" {
			fmt.Fprintf(&b, " %q", ev.ErrorMessage)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func tool(name string, parallel bool, h agentfleet.HandlerFunc) *agentfleet.Tool {
	return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Description: name, Parallel: parallel,
		InputSchema: json.RawMessage(`{"type":"object"}`)}, Handler: h}
}

func text(s string) agentfleet.HandlerFunc {
	return func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		return agentfleet.TextResult(s), nil
	}
}

func newSession(t *testing.T, model loop.Model, cfg loop.Config, ts ...*agentfleet.Tool) (*loop.Session, *events) {
	t.Helper()
	store, err := tools.NewAgentStore("test", ts...)
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	cfg.Agent, cfg.Session, cfg.Model, cfg.Tools = "test", "s1", model, store
	if cfg.Sink == nil {
		cfg.Sink = loop.Events(ev)
	}
	return loop.New(cfg), ev
}

// storeFuncs is a loop.Store of functions; a nil one stores nothing, fails
// never and knows of no unexecuted call.
type storeFuncs struct {
	append     func(runID string, m agentfleet.Message) error
	summary    func(runID string, sum *agentfleet.ContextSummary) error
	end        func(final *agentfleet.AssistantMessage) error
	unexecuted func(callID string) bool
}

func (f storeFuncs) Append(runID string, m agentfleet.Message) error {
	if f.append == nil {
		return nil
	}
	return f.append(runID, m)
}

func (f storeFuncs) AppendSummary(runID string, sum *agentfleet.ContextSummary) error {
	if f.summary == nil {
		return nil
	}
	return f.summary(runID, sum)
}

func (f storeFuncs) EndRun(final *agentfleet.AssistantMessage) error {
	if f.end == nil {
		return nil
	}
	return f.end(final)
}

func (f storeFuncs) Unexecuted(callID string) bool {
	return f.unexecuted != nil && f.unexecuted(callID)
}

// outcomes is a loop.Sink that records events and counts the runs that
// ended and were suspended.
type outcomes struct {
	*events
	mu               sync.Mutex
	ended, suspended int
}

func (o *outcomes) RunEnded(*agentfleet.AssistantMessage) {
	o.mu.Lock()
	o.ended++
	o.mu.Unlock()
}

func (o *outcomes) RunSuspended(string, error) {
	o.mu.Lock()
	o.suspended++
	o.mu.Unlock()
}

func (o *outcomes) counts() (ended, suspended int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ended, o.suspended
}

func wait(t *testing.T, ch <-chan *agentfleet.AssistantMessage) *agentfleet.AssistantMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no final message within 10s")
		return nil
	}
}

func roles(ms []agentfleet.Message) string {
	var out []string
	for _, m := range ms {
		s := m.MessageRole()
		switch m := m.(type) {
		case *agentfleet.UserMessage:
			s += ":" + agentfleet.JoinText(m.Content)
		case *agentfleet.ToolResultMessage:
			s += ":" + m.ToolName
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestRunEventOrder(t *testing.T) {
	progress := tool("progress", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		c.Progress("half")
		return agentfleet.TextResult("progress done"), nil
	})
	m := &script{steps: []step{use(`progress {}`, `missing {"a":1}`), say("All done.")}}
	s, ev := newSession(t, m, loop.Config{}, progress)
	final := wait(t, s.Send(agentfleet.NewUserMessage("go")))
	if final.StopReason != agentfleet.StopReasonStop || agentfleet.JoinText(final.Content) != "All done." {
		t.Errorf("final = %s %q", final.StopReason, agentfleet.JoinText(final.Content))
	}
	if final.Usage == nil || final.Usage.TotalTokens != 15 || final.RunID == "" {
		t.Errorf("final usage = %+v run id %q", final.Usage, final.RunID)
	}
	golden(t, "run_events", ev.transcript())
	for _, e := range ev.list() {
		if e.Agent != "test" || e.Session != "s1" || e.RunID != final.RunID || e.Time.IsZero() {
			t.Errorf("event %d envelope = %+v", e.Seq, e)
		}
	}
	if got, want := roles(s.History()), "user:go assistant tool:progress tool:missing assistant"; got != want {
		t.Errorf("history = %s, want %s", got, want)
	}
}

func TestToolResultsReachTheModel(t *testing.T) {
	m := &script{steps: []step{use(`get {"k":"v"}`), say("ok")}}
	s, _ := newSession(t, m, loop.Config{SystemPrompt: "Be brief."}, tool("get", false, text("value")))
	wait(t, s.Send(agentfleet.NewUserMessage("hi")))
	req := m.request(1)
	if req.SystemPrompt != "Be brief." {
		t.Errorf("system prompt = %q", req.SystemPrompt)
	}
	if got, want := roles(req.Messages), "user:hi assistant tool:get"; got != want {
		t.Errorf("second request = %s, want %s", got, want)
	}
	tr := req.Messages[2].(*agentfleet.ToolResultMessage)
	call := req.Messages[1].(*agentfleet.AssistantMessage).ToolCalls()[0]
	if tr.ToolCallID != call.ID || agentfleet.JoinText(tr.Content) != "value" {
		t.Errorf("tool result = %+v for call %+v", tr, call)
	}
	if len(req.Tools) != 2 || req.Tools[0].Name != "get" || req.Tools[1].Name != tools.ListToolsName {
		t.Errorf("tools = %+v", req.Tools)
	}
}

func TestTerminatedBatch(t *testing.T) {
	stop := func(text string, isErr bool) agentfleet.HandlerFunc {
		return func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if isErr {
				return nil, errors.New(text)
			}
			return &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text(text)}, Terminate: true}, nil
		}
	}
	tests := []struct {
		name      string
		calls     []string
		wantStop  agentfleet.StopReason
		wantText  string
		wantError string
	}{
		{"all terminate", []string{`deploy {}`, `submit {}`}, agentfleet.StopReasonToolTerminated, "Tool execution completed.\ndeployed\nsubmitted", ""},
		{"one does not", []string{`deploy {}`, `plain {}`}, agentfleet.StopReasonStop, "after", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &script{steps: []step{use(tt.calls...), say("after")}}
			s, _ := newSession(t, m, loop.Config{},
				tool("deploy", false, stop("deployed", false)), tool("submit", false, stop("submitted", false)), tool("plain", false, text("plain")))
			final := wait(t, s.Send(agentfleet.NewUserMessage("go")))
			if final.StopReason != tt.wantStop || agentfleet.JoinText(final.Content) != tt.wantText || final.ErrorMessage != tt.wantError {
				t.Errorf("final = %s %q %q, want %s %q %q", final.StopReason, agentfleet.JoinText(final.Content), final.ErrorMessage, tt.wantStop, tt.wantText, tt.wantError)
			}
		})
	}
	t.Run("with a failed call", func(t *testing.T) {
		m := &script{steps: []step{use(`deploy {}`)}}
		s, _ := newSession(t, m, loop.Config{Pipeline: pipeline.Config{After: func(ctx context.Context, in *pipeline.AfterContext) (*pipeline.AfterResult, error) {
			isErr := true
			return &pipeline.AfterResult{IsError: &isErr}, nil
		}}}, tool("deploy", false, stop("deployed", false)))
		final := wait(t, s.Send(agentfleet.NewUserMessage("go")))
		if final.StopReason != agentfleet.StopReasonToolTerminated || final.ErrorMessage != "One or more tool calls failed" {
			t.Errorf("final = %s %q", final.StopReason, final.ErrorMessage)
		}
	})
}

func TestSteeringBeforeNextModelCall(t *testing.T) {
	inTool := make(chan struct{})
	release := make(chan struct{})
	blocker := tool("block", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		close(inTool)
		<-release
		return agentfleet.TextResult("unblocked"), nil
	})
	m := &script{steps: []step{use(`block {}`), say("steered")}}
	s, _ := newSession(t, m, loop.Config{}, blocker)
	reply := s.Send(agentfleet.NewUserMessage("first"))
	<-inTool
	steerReply := s.Steer(agentfleet.NewUserMessage("actually, stop"))
	close(release)
	final := wait(t, reply)
	if got := wait(t, steerReply); got != final {
		t.Error("the steering message was answered by another run")
	}
	if got, want := roles(m.request(1).Messages), "user:first assistant tool:block user:actually, stop"; got != want {
		t.Errorf("second model call saw %s, want %s", got, want)
	}
	if s.Runs() != 1 {
		t.Errorf("runs = %d, want 1", s.Runs())
	}
}

func TestSteeringAfterFinalAnswerContinuesRun(t *testing.T) {
	m := &script{}
	s, _ := newSession(t, m, loop.Config{})
	var steer <-chan *agentfleet.AssistantMessage
	m.steps = []step{then(say("first answer"), func() { steer = s.Steer(agentfleet.NewUserMessage("one more thing")) }), say("second answer")}
	final := wait(t, s.Send(agentfleet.NewUserMessage("q")))
	if got, want := agentfleet.JoinText(final.Content), "second answer"; got != want {
		t.Errorf("final = %q, want %q", got, want)
	}
	if wait(t, steer) != final || s.Runs() != 1 {
		t.Error("steering after the final answer did not continue the same run")
	}
}

func TestSteerStartsRunWhenIdle(t *testing.T) {
	m := &script{steps: []step{say("hello")}}
	s, _ := newSession(t, m, loop.Config{})
	if got := agentfleet.JoinText(wait(t, s.Steer(agentfleet.NewUserMessage("hi"))).Content); got != "hello" {
		t.Errorf("final = %q", got)
	}
}

func TestFollowUpAfterRunAndNothingLostOrReordered(t *testing.T) {
	inModel := make(chan struct{})
	release := make(chan struct{})
	m := &script{steps: []step{
		then(say("answer 1"), func() { close(inModel); <-release }),
		say("answer 2"),
	}}
	s, ev := newSession(t, m, loop.Config{})
	first := s.Send(agentfleet.NewUserMessage("m0"))
	<-inModel
	var later []<-chan *agentfleet.AssistantMessage
	for i := 1; i <= 10; i++ {
		later = append(later, s.Send(agentfleet.NewUserMessage(fmt.Sprintf("m%d", i))))
	}
	close(release)
	if got := agentfleet.JoinText(wait(t, first).Content); got != "answer 1" {
		t.Errorf("first run answered %q", got)
	}
	for i, ch := range later {
		if got := agentfleet.JoinText(wait(t, ch).Content); got != "answer 2" {
			t.Errorf("m%d answered by %q, want answer 2", i+1, got)
		}
	}
	if got, want := roles(m.request(0).Messages), "user:m0"; got != want {
		t.Errorf("first run saw %s, want %s (follow-ups must wait)", got, want)
	}
	want := "user:m0 assistant user:m1 user:m2 user:m3 user:m4 user:m5 user:m6 user:m7 user:m8 user:m9 user:m10 assistant"
	if got := roles(s.History()); got != want {
		t.Errorf("history = %s, want %s", got, want)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	var starts, ends int
	for _, e := range ev.list() {
		switch e.Type {
		case agentfleet.EventRunStart:
			starts++
		case agentfleet.EventRunEnd:
			ends++
		}
	}
	if starts != 2 || ends != 2 {
		t.Errorf("run.start = %d, run.end = %d, want 2 each", starts, ends)
	}
}

func TestMaxTurns(t *testing.T) {
	var steps []step
	for range 10 {
		steps = append(steps, use(`again {}`))
	}
	m := &script{steps: steps}
	s, _ := newSession(t, m, loop.Config{MaxTurns: 3}, tool("again", false, text("again")))
	final := wait(t, s.Send(agentfleet.NewUserMessage("loop")))
	if final.StopReason != agentfleet.StopReasonMaxTurns || !strings.Contains(final.ErrorMessage, "limit of 3 turns") {
		t.Errorf("final = %s %q", final.StopReason, final.ErrorMessage)
	}
	if got := m.calls(); got != 3 {
		t.Errorf("model calls = %d, want 3", got)
	}
	if got, want := roles(s.History()), "user:loop assistant tool:again assistant tool:again assistant tool:again"; got != want {
		t.Errorf("history = %s", got)
	}
}

func TestLengthStopsWithoutExecuting(t *testing.T) {
	ran := false
	m := &script{steps: []step{func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		msg, _ := use(`write {"text":"a very long`)(ctx, req, onDelta)
		msg.StopReason = agentfleet.StopReasonLength
		msg.Content[0].Arguments = json.RawMessage(`{"text":"partial"}`)
		return msg, nil
	}}}
	s, ev := newSession(t, m, loop.Config{}, tool("write", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ran = true
		return agentfleet.TextResult("written"), nil
	}))
	final := wait(t, s.Send(agentfleet.NewUserMessage("write a lot")))
	if final.StopReason != agentfleet.StopReasonLength {
		t.Errorf("stop reason = %s, want length", final.StopReason)
	}
	if ran {
		t.Error("a tool call of a truncated response was executed")
	}
	h := s.History()
	tr, ok := h[len(h)-1].(*agentfleet.ToolResultMessage)
	if !ok || !tr.IsError || agentfleet.JoinText(tr.Content) != loop.LengthText {
		t.Errorf("last message = %+v, want the truncation error result", h[len(h)-1])
	}
	golden(t, "length_events", ev.transcript())
}

func TestAbortEndsRun(t *testing.T) {
	inTool := make(chan struct{})
	cancelled := make(chan struct{})
	m := &script{steps: []step{use(`wait {}`, `wait {}`), say("never")}}
	s, ev := newSession(t, m, loop.Config{}, tool("wait", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		close(inTool)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}))
	reply := s.Send(agentfleet.NewUserMessage("go"))
	<-inTool
	if !s.Abort("user pressed stop") {
		t.Fatal("Abort reported no active run")
	}
	final := wait(t, reply)
	<-cancelled
	if final.StopReason != agentfleet.StopReasonAborted || final.ErrorMessage != "run aborted: user pressed stop" {
		t.Errorf("final = %s %q", final.StopReason, final.ErrorMessage)
	}
	if m.calls() != 1 {
		t.Errorf("model calls = %d, want 1", m.calls())
	}
	golden(t, "abort_events", ev.transcript())
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.Abort("again") {
		t.Error("Abort on an idle session reported an active run")
	}
}

func TestAbortDuringModelCall(t *testing.T) {
	inModel := make(chan struct{})
	m := &script{steps: []step{func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		close(inModel)
		<-ctx.Done()
		return nil, ctx.Err()
	}}}
	s, ev := newSession(t, m, loop.Config{})
	reply := s.Send(agentfleet.NewUserMessage("go"))
	<-inModel
	s.Abort("")
	final := wait(t, reply)
	if final.StopReason != agentfleet.StopReasonAborted || final.ErrorMessage != "run aborted" {
		t.Errorf("final = %s %q", final.StopReason, final.ErrorMessage)
	}
	evs := ev.list()
	if last := evs[len(evs)-1]; last.Type != agentfleet.EventRunEnd || last.StopReason != agentfleet.StopReasonAborted {
		t.Errorf("last event = %s %s, want run.end aborted", last.Type, last.StopReason)
	}
}

func TestModelError(t *testing.T) {
	m := &script{steps: []step{func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		return nil, errors.New("llm: 503 Service Unavailable after 5 attempts")
	}}}
	s, ev := newSession(t, m, loop.Config{ModelName: "gpt-test"})
	final := wait(t, s.Send(agentfleet.NewUserMessage("go")))
	if final.StopReason != agentfleet.StopReasonError || final.ErrorMessage != "llm: 503 Service Unavailable after 5 attempts" || final.Model != "gpt-test" {
		t.Errorf("final = %+v", final)
	}
	golden(t, "error_events", ev.transcript())
}

func TestModelPanicIsAnError(t *testing.T) {
	m := &script{steps: []step{func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		panic("bad adapter")
	}}}
	s, _ := newSession(t, m, loop.Config{})
	if final := wait(t, s.Send(agentfleet.NewUserMessage("go"))); final.StopReason != agentfleet.StopReasonError || !strings.Contains(final.ErrorMessage, "model panicked: bad adapter") {
		t.Errorf("final = %s %q", final.StopReason, final.ErrorMessage)
	}
}

func TestHooks(t *testing.T) {
	m := &script{steps: []step{say("ok")}}
	s, _ := newSession(t, m, loop.Config{
		PrepareContext: func(ctx context.Context, st *loop.State) (*pipeline.Context, error) {
			pctx, _ := loop.DefaultPrepareContext(ctx, st)
			pctx.SystemPrompt = st.SystemPrompt + " Today is Monday."
			pctx.Tools = st.Tools.Filter("narrow", func(t *agentfleet.Tool) bool { return t.Name == "keep" })
			return pctx, nil
		},
		Format: func(st *loop.State, pctx *pipeline.Context) (*loop.Request, error) {
			req, err := loop.DefaultFormat(st, pctx)
			req.Model = "formatted-model"
			return req, err
		},
	}, tool("keep", false, text("")), tool("drop", false, text("")))
	wait(t, s.Send(agentfleet.NewUserMessage("hi")))
	req := m.request(0)
	if req.SystemPrompt != loop.DefaultSystemPrompt+" Today is Monday." || req.Model != "formatted-model" {
		t.Errorf("request = %q %q", req.SystemPrompt, req.Model)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "keep" {
		t.Errorf("tools = %+v, want only keep", req.Tools)
	}
}

func TestPrepareContextError(t *testing.T) {
	m := &script{}
	s, _ := newSession(t, m, loop.Config{PrepareContext: func(ctx context.Context, st *loop.State) (*pipeline.Context, error) {
		return nil, errors.New("retrieval index offline")
	}})
	final := wait(t, s.Send(agentfleet.NewUserMessage("hi")))
	if final.StopReason != agentfleet.StopReasonError || final.ErrorMessage != "prepare context: retrieval index offline" || m.calls() != 0 {
		t.Errorf("final = %s %q, model calls %d", final.StopReason, final.ErrorMessage, m.calls())
	}
}

func TestSessionsAreIndependent(t *testing.T) {
	block := make(chan struct{})
	slow := &script{steps: []step{then(say("slow"), func() { <-block })}}
	fast := &script{steps: []step{say("fast")}}
	s1, _ := newSession(t, slow, loop.Config{})
	s2, _ := newSession(t, fast, loop.Config{})
	r1 := s1.Send(agentfleet.NewUserMessage("a"))
	if got := agentfleet.JoinText(wait(t, s2.Send(agentfleet.NewUserMessage("b"))).Content); got != "fast" {
		t.Errorf("fast session answered %q", got)
	}
	close(block)
	wait(t, r1)
}

// TestResume continues a run that a stopped process left with tool calls in
// flight: the idempotent call runs again, the other gets an error result,
// the answered one is not run again, and the user message is not appended
// twice.
func TestResume(t *testing.T) {
	var ranSafe, ranUnsafe, ranDone int
	safe := tool("safe", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ranSafe++
		return agentfleet.TextResult("safe again"), nil
	})
	safe.Annotations.Idempotent = true
	unsafe := tool("unsafe", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ranUnsafe++
		return agentfleet.TextResult("charged twice"), nil
	})
	done := tool("done", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ranDone++
		return agentfleet.TextResult("again?"), nil
	})
	user := agentfleet.NewUserMessage("pay and check")
	user.ID = "m1"
	history := entries("run-1",
		user,
		&agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{
			{Type: agentfleet.ContentToolCall, ID: "c1", Name: "done", Arguments: json.RawMessage(`{}`)},
			{Type: agentfleet.ContentToolCall, ID: "c2", Name: "safe", Arguments: json.RawMessage(`{}`)},
			{Type: agentfleet.ContentToolCall, ID: "c3", Name: "unsafe", Arguments: json.RawMessage(`{}`)},
		}},
		&agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "c1", ToolName: "done", Content: []agentfleet.Content{agentfleet.Text("done before")}},
	)
	m := &script{steps: []step{say("resumed")}}
	s, _ := newSession(t, m, loop.Config{History: history}, safe, unsafe, done)
	final := wait(t, s.Resume("run-1"))
	if final.RunID != "run-1" || agentfleet.JoinText(final.Content) != "resumed" {
		t.Errorf("final = %+v", final)
	}
	if ranSafe != 1 || ranUnsafe != 0 || ranDone != 0 {
		t.Errorf("ran safe %d, unsafe %d, done %d; want 1, 0, 0", ranSafe, ranUnsafe, ranDone)
	}
	if got, want := roles(s.History()), "user:pay and check assistant tool:done tool:safe tool:unsafe assistant"; got != want {
		t.Errorf("history = %s, want %s", got, want)
	}
	var unsafeResult string
	for _, msg := range m.request(0).Messages {
		if tr, ok := msg.(*agentfleet.ToolResultMessage); ok && tr.ToolCallID == "c3" {
			unsafeResult = agentfleet.JoinText(tr.Content)
			if !tr.IsError {
				t.Error("the unsafe call's result is not an error")
			}
		}
	}
	if !strings.Contains(unsafeResult, "outcome is unknown") {
		t.Errorf("unsafe result = %q", unsafeResult)
	}
}

func TestLengthWithTextOnly(t *testing.T) {
	m := &script{steps: []step{func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		msg, _ := say("a long answer that was cut")(ctx, req, onDelta)
		msg.StopReason = agentfleet.StopReasonLength
		return msg, nil
	}}}
	s, _ := newSession(t, m, loop.Config{})
	final := wait(t, s.Send(agentfleet.NewUserMessage("write a lot")))
	if final.StopReason != agentfleet.StopReasonLength || final.ErrorMessage == "" || agentfleet.JoinText(final.Content) != "a long answer that was cut" {
		t.Errorf("final = %s %q %q", final.StopReason, final.ErrorMessage, agentfleet.JoinText(final.Content))
	}
}

// entries gives every message the run runID.
func entries(runID string, msgs ...agentfleet.Message) []loop.Entry {
	out := make([]loop.Entry, len(msgs))
	for i, m := range msgs {
		out[i] = loop.Entry{RunID: runID, Message: m}
	}
	return out
}
