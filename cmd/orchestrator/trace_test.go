package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/tracing/tracingtest"
	"github.com/nats-io/nats.go"
)

var (
	toolworkerOnce sync.Once
	toolworkerPath string
	toolworkerErr  error
)

// toolworkerBinary builds the toolworker program once per test binary.
func toolworkerBinary(t *testing.T) string {
	t.Helper()
	toolworkerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentfleet-toolworker-")
		if err != nil {
			toolworkerErr = err
			return
		}
		toolworkerPath = filepath.Join(dir, "toolworker")
		out, err := exec.Command("go", "build", "-o", toolworkerPath, "github.com/agentfleet/agentfleet/cmd/toolworker").CombinedOutput()
		if err != nil {
			toolworkerErr = fmt.Errorf("go build toolworker: %v\n%s", err, out)
		}
	})
	if toolworkerErr != nil {
		t.Fatal(toolworkerErr)
	}
	return toolworkerPath
}

// tracedFleet is a fleet of real processes, each exporting its traces by
// the environment env: an orchestrator, and two toolworkers, w1 serving
// calculator and sleep, w2 echo and sleep.
type tracedFleet struct {
	nc      *nats.Conn
	llm     *llmtest.Server
	orch    *exec.Cmd
	workers map[string]*exec.Cmd
}

func startTracedFleet(t *testing.T, env []string) *tracedFleet {
	t.Helper()
	srv := bustest.MustRunNATS(t)
	nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	f := &tracedFleet{nc: nc, llm: llmtest.NewServer(t), workers: map[string]*exec.Cmd{}}
	bin := toolworkerBinary(t)
	for name, tools := range map[string]string{"w1": "calculator,sleep", "w2": "echo,sleep"} {
		// Heartbeats every 250ms: the killed worker is given up after
		// 750ms of silence, while a survivor slowed by a busy machine (the
		// race detector, other tests) is not.
		cmd := exec.Command(bin, "--nats-url", srv.ClientURL(), "--name", name, "--tools", tools, "--heartbeat", "250ms", "--log-level", "warn")
		cmd.Env = append(cleanEnv(), env...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		f.workers[name] = cmd
	}
	profiles := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(profiles, []byte("agents:\n  - name: default\n    mode: parallel\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := "--nats-url " + srv.ClientURL() + " --log-level warn --http 127.0.0.1:0 --model test-model --config " + profiles
	f.orch = exec.Command(os.Args[0], "-test.run=^$")
	f.orch.Env = append(cleanEnv(), append(env, "ORCHESTRATOR_CHILD_ARGS="+args, "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+f.llm.BaseURL())...)
	f.orch.Stderr = os.Stderr
	if err := f.orch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.orch.Process.Kill()
		f.orch.Wait()
	})
	// The fleet serves once the orchestrator answers for all three tools,
	bustest.Eventually(t, "the orchestrator sees both workers", func() bool {
		m, err := nc.Request("agent.ask.default", nil, time.Second)
		if err != nil {
			return false
		}
		n := 0
		for _, name := range []string{`"calculator"`, `"echo"`, `"sleep"`} {
			if strings.Contains(string(m.Data), name) {
				n++
			}
		}
		if n < 3 {
			return false
		}
		// And its input: an abort of a session without a run is answered.
		_, err = nc.Request("agent.abort.default.probe", []byte(`{}`), time.Second)
		return err == nil
	})
	return f
}

// cleanEnv is the environment of the test without any OTEL_ variable, so
// that a child traces only as the test says.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "OTEL_") })
}

// stop stops every process with SIGTERM and waits for it: they export
// what they still buffer as they stop.
func (f *tracedFleet) stop(t *testing.T) {
	t.Helper()
	for _, cmd := range append([]*exec.Cmd{f.orch}, f.workers["w1"], f.workers["w2"]) {
		if cmd.ProcessState != nil {
			continue
		}
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
}

const (
	clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan  = "00f067aa0ba902b7"
)

// askTraced sends an ask with a client's traceparent, while the script of
// the model runs, and returns the events of the session.
func (f *tracedFleet) askTraced(t *testing.T, session string, during func(e agentfleet.Event)) (*agentfleet.AssistantMessage, []agentfleet.Event) {
	t.Helper()
	events := make(chan agentfleet.Event, 256)
	sub, err := f.nc.Subscribe("agent.events.default."+session+".>", func(m *nats.Msg) {
		var e agentfleet.Event
		if json.Unmarshal(m.Data, &e) == nil {
			events <- e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	f.nc.Flush()
	msg := nats.NewMsg("agent.ask.default." + session)
	// Written as a client might, in another case than the W3C name.
	msg.Header.Set("Traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	msg.Data = []byte(`{"content":"go"}`)
	reply := make(chan *nats.Msg, 1)
	go func() {
		m, err := f.nc.RequestMsg(msg, 60*time.Second)
		if err != nil {
			t.Error(err)
		}
		reply <- m
	}()
	var got []agentfleet.Event
	for {
		select {
		case e := <-events:
			got = append(got, e)
			if during != nil {
				during(e)
			}
		case m := <-reply:
			if m == nil {
				t.FailNow()
			}
			var final agentfleet.AssistantMessage
			if err := json.Unmarshal(m.Data, &final); err != nil {
				t.Fatal(err)
			}
			for len(got) == 0 || got[len(got)-1].Type != agentfleet.EventRunEnd {
				select {
				case e := <-events:
					got = append(got, e)
				case <-time.After(10 * time.Second):
					t.Fatalf("no run.end after the answer; events %v", got)
				}
			}
			return &final, got
		}
	}
}

// TestTraces runs a traced run over real processes: an orchestrator and
// two tool workers export over OTLP/HTTP to a receiver that decodes the
// protobuf requests. The client's ask carries a traceparent. The run has a
// parallel batch of three calls, across both workers, then a call whose
// worker is killed with SIGKILL while it runs, so that the call is retried
// on the other worker, then the answer. The test checks the span tree, the
// names and attributes of the GenAI conventions, the one trace id, the
// retry, the trace context sent to the model server, and the trace_id of
// every event.
func TestTraces(t *testing.T) {
	recv := tracingtest.NewReceiver(t)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_BSP_SCHEDULE_DELAY=50"}
	f := startTracedFleet(t, env)
	f.llm.Enqueue(
		llmtest.ToolCallsReply(
			llmtest.ToolCall{ID: "c_calc", Name: "calculator", Arguments: `{"expression":"6*7"}`},
			llmtest.ToolCall{ID: "c_echo", Name: "echo", Arguments: `{"text":"hi"}`},
			llmtest.ToolCall{ID: "c_nap", Name: "sleep", Arguments: `{"ms":10}`},
		).Response(),
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "c_long", Name: "sleep", Arguments: `{"ms":3000}`}).Response(),
		llmtest.TextReply("done").Response(),
	)

	killed := ""
	final, events := f.askTraced(t, "traced", func(e agentfleet.Event) {
		if e.Type != agentfleet.EventToolStart || e.ToolCallID != "c_long" || killed != "" {
			return
		}
		// Kill the worker that runs the long call.
		bustest.Eventually(t, "a worker running the long call", func() bool {
			subjects, _ := bus.NewSubjects("")
			ws, err := fleet.FleetStatus(context.Background(), f.nc, subjects, time.Second)
			if err != nil {
				return false
			}
			for _, w := range ws {
				if w.InFlight == 1 {
					killed = w.Name
					return true
				}
			}
			return false
		})
		f.workers[killed].Process.Signal(syscall.SIGKILL)
		f.workers[killed].Wait()
	})
	if final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("final = %+v", final)
	}
	survivor := map[string]string{"w1": "w2", "w2": "w1"}[killed]

	// Every event of the run names the client's trace.
	for _, e := range events {
		if e.TraceID != clientTrace {
			t.Errorf("%s event (seq %d) has trace_id %q, want %s", e.Type, e.Seq, e.TraceID, clientTrace)
		}
	}

	f.stop(t)
	spans := recv.WaitFor(t, 20*time.Second, func(spans []tracingtest.Span) bool {
		n := 0
		for _, s := range spans {
			if s.Service == "agentfleet-toolworker" {
				n++
			}
		}
		return n >= 4 && find(spans, "agentfleet-orchestrator", "invoke_agent default") != nil
	})
	tree := tracingtest.NewTree(spans)
	dump := tracingtest.Dump(spans)
	for _, s := range spans {
		if s.TraceID != clientTrace {
			t.Errorf("span %s of %s is in trace %s, want the client's %s", s.Name, s.Service, s.TraceID, clientTrace)
		}
	}

	run := find(spans, "agentfleet-orchestrator", "invoke_agent default")
	if run.ParentSpanID != clientSpan {
		t.Errorf("the run's span has parent %q, want the client's span %s", run.ParentSpanID, clientSpan)
	}
	wantAttrs(t, run, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "default", "gen_ai.conversation.id": "traced",
		"agentfleet.run.id": final.RunID, "agentfleet.run.stop_reason": "stop",
		"gen_ai.usage.input_tokens": int64(30),
	})

	if id, _ := run.Attrs["agentfleet.orchestrator.id"].(string); id == "" {
		t.Errorf("the run's span names no orchestrator: %v", run.Attrs)
	}
	turns := tree.Children(run.SpanID, "turn")
	if len(turns) != 3 {
		t.Fatalf("the run has %d turn spans, want 3:\n%s", len(turns), dump)
	}
	reasons := []string{"tool_calls", "tool_calls", "stop"}
	var chats []*tracingtest.Span
	for i, turn := range turns {
		wantAttrs(t, turn, map[string]any{"agentfleet.turn": int64(i + 1)})
		c := tree.Children(turn.SpanID, "chat test-model")
		if len(c) != 1 {
			t.Fatalf("turn %d has %d chat spans, want 1:\n%s", i+1, len(c), dump)
		}
		wantAttrs(t, c[0], map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.request.model": "test-model",
			"gen_ai.usage.input_tokens": int64(10), "gen_ai.response.finish_reasons": []any{reasons[i]},
		})
		chats = append(chats, c[0])
	}

	// The model server got each call's trace context.
	reqs := f.llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if want := "00-" + clientTrace + "-" + chats[i].SpanID + "-01"; r.Header.Get("Traceparent") != want {
			t.Errorf("model request %d has traceparent %q, want %q (its chat span)", i+1, r.Header.Get("Traceparent"), want)
		}
	}

	// Turn 1: the parallel batch, one span per call under the turn, each
	// with the worker's span as its child.
	wantWorker := map[string]string{"calculator": "w1", "echo": "w2"}
	for _, id := range []string{"c_calc", "c_echo", "c_nap"} {
		call := tree.ByAttr(turns[0].SpanID, "gen_ai.tool.call.id", id)
		if call == nil {
			t.Fatalf("turn 1 has no execute_tool span of %s:\n%s", id, dump)
		}
		tool := call.Attrs["gen_ai.tool.name"].(string)
		if call.Name != "execute_tool "+tool || call.Service != "agentfleet-orchestrator" {
			t.Errorf("span of %s is %q of %s", id, call.Name, call.Service)
		}
		wantAttrs(t, call, map[string]any{"gen_ai.operation.name": "execute_tool", "agentfleet.tool.outcome": "ok", "agentfleet.tool.attempts": int64(1)})
		if _, ok := call.Attrs["gen_ai.tool.call.arguments"]; ok {
			t.Errorf("span of %s carries the arguments, though content capture is off", id)
		}
		ws := tree.Children(call.SpanID, "execute_tool "+tool)
		if len(ws) != 1 || ws[0].Service != "agentfleet-toolworker" {
			t.Fatalf("call %s has %d worker spans, want 1:\n%s", id, len(ws), dump)
		}
		w := ws[0]
		if want := wantWorker[tool]; want != "" && workerName(w) != want {
			t.Errorf("worker span of %s names worker %v, want %s", id, w.Attrs["agentfleet.worker.id"], want)
		}
		if w.Attrs["agentfleet.worker.id"] != call.Attrs["agentfleet.worker.id"] {
			t.Errorf("call %s: the orchestrator's span names worker %v, the worker's %v", id, call.Attrs["agentfleet.worker.id"], w.Attrs["agentfleet.worker.id"])
		}
		wantAttrs(t, w, map[string]any{"gen_ai.tool.call.id": id, "agentfleet.tool.attempt": int64(1), "agentfleet.tool.outcome": "ok", "gen_ai.conversation.id": "traced"})
		for _, k := range []string{"agentfleet.worker.queue_wait_ms", "agentfleet.worker.execution_ms"} {
			if _, ok := w.Attrs[k].(float64); !ok {
				t.Errorf("worker span of %s has no %s: %v", id, k, w.Attrs)
			}
		}
		if w.Kind != 2 { // SPAN_KIND_SERVER
			t.Errorf("worker span of %s is of kind %v, want server", id, w.Kind)
		}
	}

	// Turn 2: the call whose worker was killed, retried on the other.
	long := tree.ByAttr(turns[1].SpanID, "gen_ai.tool.call.id", "c_long")
	if long == nil {
		t.Fatalf("turn 2 has no span of c_long:\n%s", dump)
	}
	wantAttrs(t, long, map[string]any{"agentfleet.tool.attempts": int64(2), "agentfleet.tool.outcome": "ok"})
	if workerName(long) != survivor {
		t.Errorf("c_long's span names worker %v, want %s", long.Attrs["agentfleet.worker.id"], survivor)
	}
	var names []string
	for _, e := range long.Events {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"attempt", "retry", "attempt"}) {
		t.Errorf("c_long's span has events %v, want attempt, retry, attempt", names)
	} else if r := long.Events[1]; !strings.HasPrefix(fmt.Sprint(r.Attrs["agentfleet.worker.id"]), killed+"/") || r.Attrs["agentfleet.tool.attempt"] != int64(2) || !strings.Contains(fmt.Sprint(r.Attrs["agentfleet.reason"]), "worker") {
		t.Errorf("retry event = %v, want attempt 2 after the loss of %s", r.Attrs, killed)
	}
	ws := tree.Children(long.SpanID, "execute_tool sleep")
	if len(ws) != 1 {
		// The killed worker's span of attempt 1 never ended, so it was
		// never exported.
		t.Fatalf("c_long has %d worker spans, want the survivor's:\n%s", len(ws), dump)
	}
	wantAttrs(t, ws[0], map[string]any{"agentfleet.tool.attempt": int64(2)})
	if workerName(ws[0]) != survivor {
		t.Errorf("the worker span of c_long's retry names worker %v, want %s", ws[0].Attrs["agentfleet.worker.id"], survivor)
	}
}

// TestTracesOff: with OTEL_TRACES_EXPORTER=none, an endpoint set makes no
// process export anything, and events carry no trace_id, although the
// client sent a traceparent.
func TestTracesOff(t *testing.T) {
	recv := tracingtest.NewReceiver(t)
	f := startTracedFleet(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_TRACES_EXPORTER=none"})
	f.llm.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "c_echo", Name: "echo", Arguments: `{"text":"hi"}`}).Response(),
		llmtest.TextReply("done").Response(),
	)
	final, events := f.askTraced(t, "untraced", nil)
	if final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("final = %+v", final)
	}
	for _, e := range events {
		if e.TraceID != "" {
			t.Errorf("%s event carries trace_id %q with tracing off", e.Type, e.TraceID)
		}
	}
	for i, r := range f.llm.Requests() {
		if tp := r.Header.Get("Traceparent"); tp != "" {
			t.Errorf("model request %d carries traceparent %q with tracing off", i+1, tp)
		}
	}
	f.stop(t) // each process would export what it buffered now
	if n := recv.Requests(); n != 0 {
		t.Errorf("the receiver got %d export requests with tracing off:\n%s", n, tracingtest.Dump(recv.Spans()))
	}
}

// workerName is the name part of a span's worker id (name/instance).
func workerName(s *tracingtest.Span) string {
	name, _, _ := strings.Cut(fmt.Sprint(s.Attrs["agentfleet.worker.id"]), "/")
	return name
}

func find(spans []tracingtest.Span, service, name string) *tracingtest.Span {
	for i := range spans {
		if spans[i].Service == service && spans[i].Name == name {
			return &spans[i]
		}
	}
	return nil
}

func wantAttrs(t *testing.T, s *tracingtest.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got := s.Attrs[k]; fmt.Sprint(got) != fmt.Sprint(v) || fmt.Sprintf("%T", got) != fmt.Sprintf("%T", v) {
			t.Errorf("span %q of %s: %s = %v (%T), want %v (%T)", s.Name, s.Service, k, got, got, v, v)
		}
	}
}
