package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/tools/builtin"
)

func TestRunExecutesToolsOnWorkers(t *testing.T) {
	model := newScript().on("s1", use(`calculator {"expression":"2*(3+4)"}`, `echo {"text":"hi"}`), sayResults())
	f := startFleet(t, orchestrator.Config{Model: model},
		toolrpc.ServerConfig{Name: "w", Tools: builtin.All(builtin.Options{})})
	final := f.ask(t, "default", "s1", `{"content":"compute","id":"m1"}`)
	if got, want := agentfleet.JoinText(final.Content), "calculator=14; echo=hi"; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
	if final.StopReason != agentfleet.StopReasonStop || final.RunID == "" || final.Model != "scripted" {
		t.Errorf("final = %+v", final)
	}
	// The events tell the whole run, each tool.end naming the worker.
	end := f.events.wait(t, "run.end", isType(agentfleet.EventRunEnd))
	ends := f.events.list(isType(agentfleet.EventToolEnd))
	if len(ends) != 2 {
		t.Fatalf("tool.end events = %d, want 2", len(ends))
	}
	for _, e := range ends {
		if e.IsError || !strings.HasPrefix(e.Worker, "w/") || e.DurationMS <= 0 || e.Agent != "default" || e.Session != "s1" {
			t.Errorf("tool.end = %+v", e)
		}
	}
	if end.StopReason != agentfleet.StopReasonStop || end.RunID != final.RunID {
		t.Errorf("run.end = %+v", end)
	}
	// The model saw the fleet's tools plus list_tools, in name order.
	var names []string
	for _, d := range model.requests("s1")[0].Tools {
		names = append(names, d.Name)
	}
	if got, want := strings.Join(names, ","), "list_tools,calculator,echo,get_time,get_weather,http_fetch,sleep"; got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}
}

func TestOutSubjectAndFireAndForget(t *testing.T) {
	model := newScript().on("s2", say("hello there"))
	f := startFleet(t, orchestrator.Config{Model: model}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	sub, err := f.nc.SubscribeSync("agent.out.default.s2")
	if err != nil {
		t.Fatal(err)
	}
	f.nc.Flush()
	if err := f.nc.Publish("agent.in.default.s2", []byte("plain text is fine")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(m.Data, &out); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"role", "content", "stop_reason", "model", "run_id", "timestamp"} {
		if _, ok := out[k]; !ok {
			t.Errorf("out message lacks %q: %s", k, m.Data)
		}
	}
	if got := model.requests("s2")[0].Messages[0].(*agentfleet.UserMessage); agentfleet.JoinText(got.Content) != "plain text is fine" {
		t.Errorf("user message = %+v", got)
	}
}

// TestParallelCallsSpreadAndOverlap gives two workers a concurrency of one
// each and asks for two calls at once: both must be running together, so
// they must be on different workers.
func TestParallelCallsSpreadAndOverlap(t *testing.T) {
	started := make(chan string, 2)
	release := make(chan struct{})
	barrier := tool("barrier", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		started <- c.ID
		select {
		case <-release:
			return agentfleet.TextResult("through"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	model := newScript().on("p", use(`barrier {}`, `barrier {}`), sayResults())
	f := startFleet(t, orchestrator.Config{Model: model},
		toolrpc.ServerConfig{Name: "a", Tools: []*agentfleet.Tool{barrier}, Concurrency: 1},
		toolrpc.ServerConfig{Name: "b", Tools: []*agentfleet.Tool{barrier}, Concurrency: 1})
	done := make(chan *agentfleet.AssistantMessage)
	go func() { done <- f.ask(t, "default", "p", "go") }()
	<-started
	<-started // both calls run at the same time
	close(release)
	final := <-done
	if got, want := agentfleet.JoinText(final.Content), "barrier=through; barrier=through"; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
	f.events.wait(t, "run.end", isType(agentfleet.EventRunEnd))
	workers := map[string]bool{}
	for _, e := range f.events.list(isType(agentfleet.EventToolEnd)) {
		workers[e.Worker] = true
	}
	if len(workers) != 2 {
		t.Errorf("calls ran on workers %v, want two different ones", workers)
	}
}

// TestSaturatedWorkerGetsNoMoreThanItsLimit runs more calls at once than
// one worker may take: the busy worker refuses the excess, which goes to
// the other, and neither ever runs more than its limit.
func TestSaturatedWorkerGetsNoMoreThanItsLimit(t *testing.T) {
	const limit, calls = 2, 4
	var mu sync.Mutex
	inFlight, peak := map[string]int{}, map[string]int{}
	started := make(chan struct{}, calls)
	release := make(chan struct{})
	blocking := func(worker string) *agentfleet.Tool {
		return tool("block", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			mu.Lock()
			inFlight[worker]++
			peak[worker] = max(peak[worker], inFlight[worker])
			mu.Unlock()
			started <- struct{}{}
			<-release
			mu.Lock()
			inFlight[worker]--
			mu.Unlock()
			return agentfleet.TextResult("ok"), nil
		})
	}
	var uses []string
	for range calls {
		uses = append(uses, `block {}`)
	}
	model := newScript().on("sat", use(uses...), say("done"))
	f := startFleet(t, orchestrator.Config{Model: model},
		toolrpc.ServerConfig{Name: "x", Tools: []*agentfleet.Tool{blocking("x")}, Concurrency: limit},
		toolrpc.ServerConfig{Name: "y", Tools: []*agentfleet.Tool{blocking("y")}, Concurrency: limit})
	done := make(chan *agentfleet.AssistantMessage)
	go func() { done <- f.ask(t, "default", "sat", "go") }()
	for range calls {
		<-started // all four run at once: two on each worker
	}
	close(release)
	<-done
	for w, p := range peak {
		if p > limit {
			t.Errorf("worker %s ran %d calls at once, limit %d", w, p, limit)
		}
	}
	if peak["x"] != limit || peak["y"] != limit {
		t.Errorf("peaks = %v, want %d on each", peak, limit)
	}
}

func TestProgressReachesToolUpdate(t *testing.T) {
	model := newScript().on("pr", use(`sleep {"ms":300}`), say("slept"))
	f := startFleet(t, orchestrator.Config{Model: model},
		toolrpc.ServerConfig{Tools: []*agentfleet.Tool{builtin.Sleep(20 * time.Millisecond)}})
	f.ask(t, "default", "pr", "sleep")
	f.events.wait(t, "run.end", isType(agentfleet.EventRunEnd))
	updates := f.events.list(isType(agentfleet.EventToolUpdate))
	if len(updates) < 3 {
		t.Fatalf("tool.update events = %d, want several", len(updates))
	}
	for _, u := range updates {
		p, ok := u.Partial.(map[string]any)
		if !ok || u.ToolName != "sleep" || p["total_ms"] != float64(300) {
			t.Errorf("tool.update = %+v", u)
		}
	}
	// Every update comes before the call's end.
	end := f.events.wait(t, "tool.end", isType(agentfleet.EventToolEnd))
	if last := updates[len(updates)-1]; last.Seq > end.Seq {
		t.Errorf("tool.update seq %d after tool.end seq %d", last.Seq, end.Seq)
	}
}

func TestAbortCancelsCallOnWorker(t *testing.T) {
	canceled := make(chan error, 1)
	running := make(chan struct{})
	wait := tool("wait", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		close(running)
		<-ctx.Done()
		canceled <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	model := newScript().on("ab", use(`wait {}`), say("never"))
	f := startFleet(t, orchestrator.Config{Model: model}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{wait}})
	done := make(chan *agentfleet.AssistantMessage)
	go func() { done <- f.ask(t, "default", "ab", "go") }()
	<-running
	if err := f.nc.Publish("agent.abort.default.ab", []byte(`{"reason":"user hit stop"}`)); err != nil {
		t.Fatal(err)
	}
	final := <-done
	if final.StopReason != agentfleet.StopReasonAborted || final.ErrorMessage != "run aborted: user hit stop" {
		t.Errorf("final = %s %q", final.StopReason, final.ErrorMessage)
	}
	select {
	case cause := <-canceled:
		if cause != toolrpc.ErrCanceledByOrchestrator {
			t.Errorf("worker's cause = %v, want %v", cause, toolrpc.ErrCanceledByOrchestrator)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker's call was not cancelled")
	}
	end := f.events.wait(t, "run.end", isType(agentfleet.EventRunEnd))
	if end.StopReason != agentfleet.StopReasonAborted {
		t.Errorf("run.end = %s", end.StopReason)
	}
}

func TestTimeout(t *testing.T) {
	slow := tool("slow", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	slow.TimeoutMS = 200
	model := newScript().on("to", use(`slow {}`), sayResults())
	f := startFleet(t, orchestrator.Config{Model: model}, toolrpc.ServerConfig{Name: "keep", Tools: []*agentfleet.Tool{slow}})
	final := f.ask(t, "default", "to", "go")
	if got := agentfleet.JoinText(final.Content); !strings.Contains(got, "slow=Tool slow: tool call timed out after 200ms on worker keep/") {
		t.Errorf("timeout answer = %q", got)
	}
}

// TestWorkerLeaves stops the only worker of a tool: the fleet's discovery
// drops the tool from the agent's store, and a call to it is "not found".
func TestWorkerLeaves(t *testing.T) {
	model := newScript().on("nr", use(`gone {}`), sayResults())
	f := startFleet(t, orchestrator.Config{Model: model},
		toolrpc.ServerConfig{Name: "stay", Tools: []*agentfleet.Tool{echo("stay")}},
		toolrpc.ServerConfig{Name: "leave", Tools: []*agentfleet.Tool{echo("gone")}})
	if _, ok := find(f.orch, "default", "gone"); !ok {
		t.Fatal("gone not discovered")
	}
	if err := f.workers[1].Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "gone removed from the store", func() bool {
		_, ok := find(f.orch, "default", "gone")
		return !ok
	})
	if got, want := agentfleet.JoinText(f.ask(t, "default", "nr", "go").Content), "gone=Tool gone not found"; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
}

func TestNoRespondersOnTheClient(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	c, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = fleetexec.Executor{Client: c}.Execute(context.Background(), prepared("nobody", 30*time.Second), func(any) {})
	if err == nil || !strings.Contains(err.Error(), "Tool nobody: no worker serves the tool (no worker is subscribed to agent.tool.nobody)") {
		t.Errorf("err = %v", err)
	}
}

func TestWorkerJoinsAtRunTime(t *testing.T) {
	model := newScript().on("j", use(`late {"x":1}`), sayResults())
	f := startFleet(t, orchestrator.Config{Model: model}, toolrpc.ServerConfig{Name: "early", Tools: []*agentfleet.Tool{echo("early")}})
	if _, ok := find(f.orch, "default", "late"); ok {
		t.Fatal("late tool known before its worker started")
	}
	f.addWorker(t, toolrpc.ServerConfig{Name: "late", Tools: []*agentfleet.Tool{echo("late")}})
	bustest.Eventually(t, "the late tool in the agent's store", func() bool {
		_, ok := find(f.orch, "default", "late")
		return ok
	})
	if got, want := agentfleet.JoinText(f.ask(t, "default", "j", "go").Content), `late=late{"x":1}`; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
}

func TestAgentIsolation(t *testing.T) {
	model := newScript().
		on("i1", use(`get_time {"timezone":"UTC"}`, `calculator {"expression":"1+1"}`), sayResults()).
		on("i2", use(`list_tools {}`), sayResults())
	f := startFleet(t, orchestrator.Config{Model: model, Profiles: []orchestrator.Profile{
		{Name: "calc", Tools: []string{"calc*"}},
		{Name: "clock", Tools: []string{"get_time"}},
	}}, toolrpc.ServerConfig{Tools: builtin.All(builtin.Options{})})
	got := agentfleet.JoinText(f.ask(t, "calc", "i1", "go").Content)
	if want := "get_time=Tool get_time not found; calculator=2"; got != want {
		t.Errorf("calc agent answer = %q, want %q", got, want)
	}
	got = agentfleet.JoinText(f.ask(t, "clock", "i2", "go").Content)
	if !strings.Contains(got, "- get_time:") || strings.Contains(got, "calculator") {
		t.Errorf("clock agent's list_tools = %q", got)
	}
}

func TestBadInputKeepsServing(t *testing.T) {
	model := newScript().on("good", say("still here"))
	f := startFleet(t, orchestrator.Config{Model: model}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	bad := []struct {
		subject, payload, want string
	}{
		{"agent.in.nobody.s", "hi", `unknown agent "nobody" (agents: default)`},
		{"agent.in.default.a@b", "hi", `session name "a@b" may hold only letters, digits, '-' and '_'`},
		{"agent.in.default.s", "", "payload is empty"},
		{"agent.in.default.s", `{"content": 5}`, "content must be a string or an array of content blocks"},
		{"agent.in.default.s", `{"content": "x"`, "payload is not a valid message object"},
		{"agent.in.default.s", `{"content": [{"type":"video"}]}`, `content[0]: content block type "video" is not one of text, image`},
		{"agent.in.default.s", `{"content": [{"type":"image","mime_type":"image/png","data":"%%%"}]}`, "content[0]: image block: data is not base64"},
		{"agent.in.default.s", `{"text": "x"}`, `unknown field "text"`},
		{"agent.abort.default.idle", "", "has no active run to abort"},
	}
	for _, b := range bad {
		if err := f.nc.Publish(b.subject, []byte(b.payload)); err != nil {
			t.Fatal(err)
		}
	}
	// An ask with a bad payload gets an error reply.
	reply := f.ask(t, "default", "s", `{"content": []}`)
	if reply.StopReason != agentfleet.StopReasonError || reply.ErrorMessage != "content is an empty array" {
		t.Errorf("bad ask reply = %+v", reply)
	}
	for _, b := range bad {
		e := f.events.wait(t, "error for "+b.subject, func(e agentfleet.Event) bool {
			return e.Type == agentfleet.EventError && strings.Contains(e.ErrorMessage, b.want)
		})
		if e.Subject != b.subject || e.Payload != b.payload {
			t.Errorf("error event names %q %q, want %q %q", e.Subject, e.Payload, b.subject, b.payload)
		}
	}
	if got := agentfleet.JoinText(f.ask(t, "default", "good", "hello").Content); got != "still here" {
		t.Errorf("good ask answered %q", got)
	}
}

func TestManySessionsDoNotBlockEachOther(t *testing.T) {
	block := make(chan struct{})
	var blocked atomic.Bool
	model := newScript().
		on("slow", func(req *loopRequest) *agentfleet.AssistantMessage {
			blocked.Store(true)
			<-block
			return say("slow")(req)
		}).
		on("fast", say("fast"))
	f := startFleet(t, orchestrator.Config{Model: model}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	slow := make(chan *agentfleet.AssistantMessage)
	go func() { slow <- f.ask(t, "default", "slow", "x") }()
	bustest.Eventually(t, "the slow session in its model call", blocked.Load)
	if got := agentfleet.JoinText(f.ask(t, "default", "fast", "y").Content); got != "fast" {
		t.Errorf("fast = %q", got)
	}
	close(block)
	<-slow
}
