package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
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
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// run starts the orchestrator program in-process with args.
func run(t *testing.T, args ...string) *Main {
	t.Helper()
	m := NewMain()
	m.Stderr = new(strings.Builder)
	embedded := []string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}
	if slices.Contains(args, "--nats-url") {
		embedded = nil // joining a server: the embedded one's flags would conflict
	}
	args = append(append(embedded, "--http", "127.0.0.1:0"), args...)
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return m
}

// TestFlagsBeatTheEnvironment sets NATS_URL and gives --listen and
// --data-dir: the orchestrator runs its embedded server there, as the
// flags say, instead of joining $NATS_URL, and says so. --nats-url given
// with them is a conflict of two flags: an error naming both.
func TestFlagsBeatTheEnvironment(t *testing.T) {
	t.Setenv("NATS_URL", "nats://127.0.0.1:1")
	m := NewMain()
	var stderr strings.Builder
	m.Stderr = &stderr
	dir := t.TempDir()
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--http", ""}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatalf("with --listen and --data-dir given and NATS_URL set: %v", err)
	}
	defer m.Close()
	if m.embedded == nil || strings.Contains(m.NATSURL(), "127.0.0.1:1") {
		t.Errorf("joined %s, want the embedded server of --listen", m.NATSURL())
	}
	if !strings.Contains(stderr.String(), "not joining $NATS_URL") {
		t.Errorf("the log does not say $NATS_URL was overruled: %s", stderr.String())
	}
	m2 := NewMain()
	m2.Stderr = new(strings.Builder)
	err := m2.ParseFlags([]string{"--nats-url", "nats://127.0.0.1:1", "--data-dir", dir})
	if err == nil || !strings.Contains(err.Error(), "--nats-url") || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("--nats-url with --data-dir: err = %v, want a conflict naming both", err)
	}
}

func connect(t *testing.T, m *Main) *nats.Conn {
	t.Helper()
	nc, err := bus.Connect(bus.ConnectConfig{URL: m.NATSURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func ask(t *testing.T, nc *nats.Conn, subject, text string) *agentfleet.AssistantMessage {
	t.Helper()
	reply, err := nc.Request(subject, []byte(text), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var m agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// TestDefaultRun is the README's run command with no API key: the offline
// model asks for two tools in one batch and the in-process workers run them.
func TestDefaultRun(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	m := run(t, "--workers", "2")
	nc := connect(t, m)
	ends := make(chan agentfleet.Event, 8)
	sub, err := nc.Subscribe("agent.events.default.demo.tool.end", func(msg *nats.Msg) {
		var e agentfleet.Event
		if json.Unmarshal(msg.Data, &e) == nil {
			ends <- e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	final := ask(t, nc, "agent.ask.default.demo", "what time is it in Tokyo and what is 2*(3+4)?")
	text := agentfleet.JoinText(final.Content)
	if !strings.Contains(text, "calculator: 14") || !strings.Contains(text, "+09:00") {
		t.Errorf("answer = %q", text)
	}
	if final.Model != "offline" || final.StopReason != agentfleet.StopReasonStop {
		t.Errorf("final = %+v", final)
	}
	for range 2 {
		select {
		case e := <-ends:
			if e.IsError || !strings.HasPrefix(e.Worker, "toolworker/") {
				t.Errorf("tool.end = %+v", e)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("missing tool.end event")
		}
	}
	if got := len(m.Orchestrator().Fleet().Tools()); got != 6 {
		t.Errorf("fleet tools = %d, want 6", got)
	}
}

// TestOpenAICompatibleServer runs the system against an OpenAI-compatible
// server through go-openai: the model asks for two tools in parallel, the
// workers run them, and the model answers from their results.
func TestOpenAICompatibleServer(t *testing.T) {
	llm := llmtest.NewServer(t)
	t.Setenv("OPENAI_BASE_URL", llm.BaseURL())
	t.Setenv("OPENAI_API_KEY", "test-key")
	llm.Enqueue(
		llmtest.ToolCallsReply(
			llmtest.ToolCall{ID: "call_a", Name: "calculator", Arguments: `{"expression":"6*7"}`},
			llmtest.ToolCall{ID: "call_b", Name: "echo", Arguments: `{"text":"parallel"}`},
			llmtest.ToolCall{ID: "call_c", Name: "echo", Arguments: `{"text": "unterminated`},
		).Response(),
		llmtest.TextReply("The answer is 42.").Response(),
	)
	m := run(t, "--workers", "2", "--model", "test-model")
	nc := connect(t, m)
	final := ask(t, nc, "agent.ask.default.oa", "what is 6*7?")
	if got, want := agentfleet.JoinText(final.Content), "The answer is 42."; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
	reqs := llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	if reqs[0].Model != "test-model" || !reqs[0].Stream || len(reqs[0].Tools) != 9 { // six built-ins, list_tools, write_tool, delete_tool
		t.Errorf("first request: model %q stream %v tools %d", reqs[0].Model, reqs[0].Stream, len(reqs[0].Tools))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("authorization = %q", got)
	}
	results := map[string]string{}
	for _, msg := range reqs[1].Messages {
		if msg.Role == "tool" {
			results[msg.ToolCallID] = msg.Text()
		}
	}
	if results["call_a"] != "42" || results["call_b"] != "parallel" {
		t.Errorf("tool results sent to the model = %v", results)
	}
	// Malformed arguments become an error result for that call alone.
	if got := results["call_c"]; !strings.Contains(got, "Tool echo: arguments are not valid JSON") {
		t.Errorf("result of the malformed call = %q", got)
	}
	// The model's requests and tokens are counted.
	_, body := scrape(t, "http://"+m.HTTPAddr()+"/metrics")
	for _, want := range []string{"agentfleet_llm_attempts_total 2", "agentfleet_llm_request_duration_seconds_count 2", `agentfleet_tool_call_duration_seconds_count{outcome="invalid",tool="echo"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(body, `agentfleet_llm_tokens_total{kind="input"}`) {
		t.Error("/metrics lacks token counts")
	}
}

func TestListenTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--listen", l.Addr().String(), "--data-dir", t.TempDir(), "--http", ""}); err != nil {
		t.Fatal(err)
	}
	err = m.Run(context.Background())
	m.Close()
	if err == nil || !strings.Contains(err.Error(), "--listen") || !strings.Contains(err.Error(), "--nats-url") || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Errorf("err = %v, want one naming the address, --listen and --nats-url", err)
	}
}

func TestBadProfiles(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ file, want string }{
		{"agents:\n  - name: ok\n    mode: turbo\n", `agent "ok": mode "turbo" is not parallel or sequential`},
		{"agents:\n  - name: a.b\n", `agent name "a.b" may hold only letters`},
		{"agents:\n  - name: x\n    colour: red\n", "field colour not found"},
		{"agents:\n  - name: x\n  - name: x\n", `agent "x" is defined twice`},
		{"agents:\n  - name: x\n    tool_timeout: soon\n", `tool_timeout "soon" is not a positive duration`},
		{"{}", "no agents"},
	}
	for i, tt := range tests {
		path := filepath.Join(dir, "agents.yaml")
		if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
			t.Fatal(err)
		}
		m := NewMain()
		m.Stderr = new(strings.Builder)
		err := m.ParseFlags([]string{"--config", path})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("case %d: err = %v, want %q naming the file", i, err, tt.want)
		}
	}
}

func TestProfilesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agents.json")
	os.WriteFile(path, []byte(`{"agents":[{"name":"math","system_prompt":"Only do math.","tools":["calculator"],"mode":"sequential","max_turns":3}]}`), 0o644)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	m := run(t, "--workers", "1", "--config", path)
	defs, ok := m.Orchestrator().Tools("math")
	if !ok {
		t.Fatal("agent math missing")
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if got, want := strings.Join(names, ","), "list_tools,calculator"; got != want {
		t.Errorf("math tools = %s, want %s", got, want)
	}
	if _, ok := m.Orchestrator().Tools("default"); ok {
		t.Error("a config file with agents still has the default agent")
	}
}

// The test binary doubles as the orchestrator program for crash tests.
func TestMain(m *testing.M) {
	if url, ok := os.LookupEnv("SCRIPT_WORKER_URL"); ok {
		runScriptWorker(url)
		return
	}
	if args, ok := os.LookupEnv("ORCHESTRATOR_CHILD_ARGS"); ok {
		os.Args = append([]string{"orchestrator"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startOrchestrator(t *testing.T, args string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ORCHESTRATOR_CHILD_ARGS="+args, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
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

// runScriptWorker is a worker process that serves echo and the fleet's
// scripted tools, as `toolworker --scripts --tools echo` does, until SIGTERM.
func runScriptWorker(url string) {
	nc, err := bus.Connect(bus.ConnectConfig{URL: url})
	if err != nil {
		os.Exit(3)
	}
	w, err := worker.Start(nc, worker.Config{Name: "scriptworker", Tools: []string{"echo"}, Scripts: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	w.Drain(context.Background())
	os.Exit(0)
}

// startScriptWorkerProcess starts a script worker process (runScriptWorker)
// on url and waits until it joined the fleet. The returned stop, also called
// when the test ends, stops it with SIGTERM and waits for it; it may be
// called more than once.
func startScriptWorkerProcess(t *testing.T, url string) (stop func()) {
	t.Helper()
	nc, err := bus.Connect(bus.ConnectConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	joined, _ := nc.SubscribeSync("agent.fleet")
	nc.Flush()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "SCRIPT_WORKER_URL="+url)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			child.Process.Signal(syscall.SIGTERM)
			child.Wait()
		})
	}
	t.Cleanup(stop)
	for {
		m, err := joined.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("the script worker did not join: %v", err)
		}
		var n fleet.FleetNotice
		if json.Unmarshal(m.Data, &n) == nil && n.Event == "joined" {
			return stop
		}
	}
}

// TestSelfTooling is the workflow of spec section 15 as it works here: the
// model writes a tool with write_tool and calls it in the next turn, and a
// worker process that was started before the tool existed runs it.
func TestSelfTooling(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	written, _ := nc.SubscribeSync("agent.events._.fleet.tool.written")
	nc.Flush()
	startScriptWorkerProcess(t, srv.ClientURL())

	llm := llmtest.NewServer(t)
	t.Setenv("OPENAI_BASE_URL", llm.BaseURL())
	t.Setenv("OPENAI_API_KEY", "k")
	def := map[string]any{
		"name": "double", "label": "Double", "description": "Doubles n.",
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []string{"n"}},
		"code":         "def execute(args):\n    progress({\"n\": args[\"n\"]})\n    return str(args[\"n\"] * 2)\n",
		"annotations":  map[string]any{"read_only": true, "idempotent": true},
	}
	defJSON, _ := json.Marshal(def)
	llm.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "w1", Name: "write_tool", Arguments: string(defJSON)}).Response(),
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "d1", Name: "double", Arguments: `{"n":21}`}).Response(),
		llmtest.TextReply("21 doubled is 42.").Response(),
	)
	m := run(t, "--nats-url", srv.ClientURL())
	final := ask(t, nc, "agent.ask.default.self", "double 21 with a tool of your own")
	if got, want := agentfleet.JoinText(final.Content), "21 doubled is 42."; got != want {
		t.Errorf("answer = %q (%s %s), want %q", got, final.StopReason, final.ErrorMessage, want)
	}
	reqs := llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3", len(reqs))
	}
	results := map[string]string{}
	for _, msg := range reqs[2].Messages {
		if msg.Role == "tool" {
			results[msg.ToolCallID] = msg.Text()
		}
	}
	if !strings.Contains(results["w1"], "Tool double written") {
		t.Errorf("write_tool result = %q", results["w1"])
	}
	if results["d1"] != "42" {
		t.Errorf("double result = %q, want 42", results["d1"])
	}
	var names []string
	for _, tool := range reqs[1].Tools {
		names = append(names, tool.Function.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "double") {
		t.Errorf("the second turn's tools %v lack double", names)
	}
	if _, err := written.NextMsg(5 * time.Second); err != nil {
		t.Errorf("no tool.written event: %v", err)
	}
	if _, ok := m.Orchestrator().Tools("default"); !ok {
		t.Error("no default agent")
	}
}

func scrape(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsAndReadiness scrapes /metrics after one run and checks that the
// counters moved by what the run did; /readyz turns 503 when NATS goes away.
func TestMetricsAndReadiness(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--nats-url", srv.ClientURL(), "--workers", "1", "--http", "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// NATS is gone at the end of this test, so the workers cannot drain
	// cleanly: the close error is expected and not checked.
	defer m.Close()
	base := "http://" + m.HTTPAddr()
	if code, body := scrape(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	if code, _ := scrape(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz = %d", code)
	}
	nc := connect(t, m)
	if final := ask(t, nc, "agent.ask.default.metrics", "what is 6*7?"); !strings.Contains(agentfleet.JoinText(final.Content), "42") {
		t.Fatalf("answer = %q", agentfleet.JoinText(final.Content))
	}
	_, body := scrape(t, base+"/metrics")
	for _, want := range []string{
		`agentfleet_runs_started_total 1`,
		`agentfleet_runs_ended_total{stop_reason="stop"} 1`,
		`agentfleet_turns_total 2`,
		`agentfleet_tool_call_duration_seconds_count{outcome="ok",tool="calculator"} 1`,
		`agentfleet_tool_attempts_total{outcome="ok",tool="calculator"} 1`,
		`agentfleet_worker_calls_total{outcome="ok",tool="calculator"} 1`,
		`agentfleet_input_messages_total{outcome="accepted"} 1`,
		`agentfleet_tool_calls_in_flight 0`,
		`agentfleet_runs_active 0`,
		`agentfleet_sessions 1`,
		`go_goroutines`,
		`process_resident_memory_bytes`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, label := range []string{`session="`, `run_id="`, `tool_call_id="`} {
		if strings.Contains(body, label) {
			t.Errorf("/metrics has the unbounded label %s", label)
		}
	}
	srv.Shutdown()
	bustest.Eventually(t, "/readyz to fail without NATS", func() bool {
		code, _ := scrape(t, base+"/readyz")
		return code == 503
	})
}

func TestHTTPPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--http", l.Addr().String(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	err = m.Run(context.Background())
	m.Close()
	if err == nil || !strings.Contains(err.Error(), "--http "+l.Addr().String()) {
		t.Errorf("err = %v, want one naming --http and the address", err)
	}
}

// TestStreamPerProfile: --llm-stream sets the default, and a profile's
// stream: false asks that agent's model without streaming.
func TestStreamPerProfile(t *testing.T) {
	llm := llmtest.NewServer(t)
	t.Setenv("OPENAI_BASE_URL", llm.BaseURL())
	t.Setenv("OPENAI_API_KEY", "k")
	llm.Enqueue(llmtest.TextReply("streamed").Response(), llmtest.TextReply("whole").Response())
	path := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(path, []byte("agents:\n  - name: streams\n  - name: plain\n    stream: false\n"), 0o644)
	m := run(t, "--workers", "1", "--config", path)
	nc := connect(t, m)
	if got := agentfleet.JoinText(ask(t, nc, "agent.ask.streams.s", "hi").Content); got != "streamed" {
		t.Errorf("streams answered %q", got)
	}
	if got := agentfleet.JoinText(ask(t, nc, "agent.ask.plain.s", "hi").Content); got != "whole" {
		t.Errorf("plain answered %q", got)
	}
	reqs := llm.Requests()
	if len(reqs) != 2 || !reqs[0].Stream || reqs[1].Stream {
		t.Errorf("stream flags of the requests: %v, %v; want true, false", len(reqs) > 0 && reqs[0].Stream, len(reqs) > 1 && reqs[1].Stream)
	}
}

// TestOrchestratorStoppedMidRun stops the orchestrator process while its run
// waits for a tool, and starts another on the same NATS: with SIGKILL (a
// crash), and with SIGTERM and a short grace (the run is left at a safe
// point). Either way the process ends, the input is delivered again, the run
// completes, one final message is published, and the stored history holds
// the user message once and no tool result twice.
func TestOrchestratorStoppedMidRun(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := bustest.MustRunNATS(t)
			nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			toolStart, _ := nc.SubscribeSync("agent.events.default.stop.tool.start")
			runEnds, _ := nc.SubscribeSync("agent.events.default.stop.run.end")
			suspended, _ := nc.SubscribeSync("agent.events.default.stop.run.suspended")
			out, _ := nc.SubscribeSync("agent.out.default.stop")
			nc.Flush()
			// A killed orchestrator holds the lead until it expires.
			args := "--nats-url " + srv.ClientURL() + " --workers 1 --ack-wait 1s --leader-ttl 1s --shutdown-timeout 200ms --log-level warn --http 127.0.0.1:0"
			first := startOrchestrator(t, args)
			// Input is durable once the orchestrator has made its input stream.
			js, _ := jetstream.New(nc)
			bustest.Eventually(t, "the input stream", func() bool {
				_, err := js.Stream(context.Background(), "AGENT_INPUT")
				return err == nil
			})
			if err := nc.Publish("agent.in.default.stop", []byte(`{"content":"sleep 1500","id":"stop-1"}`)); err != nil {
				t.Fatal(err)
			}
			if _, err := toolStart.NextMsg(20 * time.Second); err != nil {
				t.Fatalf("no tool.start: %v", err)
			}
			stopped := time.Now()
			if err := first.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			first.Wait()
			if d := time.Since(stopped); d > 15*time.Second {
				t.Errorf("the orchestrator took %v to stop", d)
			}

			startOrchestrator(t, args)
			m, err := out.NextMsg(30 * time.Second)
			if err != nil {
				t.Fatalf("no final message after the restart: %v", err)
			}
			var final agentfleet.AssistantMessage
			json.Unmarshal(m.Data, &final)
			if final.StopReason != agentfleet.StopReasonStop || !strings.Contains(agentfleet.JoinText(final.Content), "slept 1500 ms") {
				t.Errorf("final = %s %q", final.StopReason, agentfleet.JoinText(final.Content))
			}
			if m, err := out.NextMsg(500 * time.Millisecond); err == nil {
				t.Errorf("a second final message: %s", m.Data)
			}
			// One run.end for the run, from the orchestrator that ended it;
			// the one cut short by SIGTERM said run.suspended instead.
			if n, _, _ := runEnds.Pending(); n != 1 {
				t.Errorf("%d run.end events, want 1", n)
			}
			wantSuspended := 0
			if sig == syscall.SIGTERM {
				wantSuspended = 1
			}
			if n, _, _ := suspended.Pending(); n != wantSuspended {
				t.Errorf("%d run.suspended events, want %d", n, wantSuspended)
			}
			subjects, _ := bus.NewSubjects("")
			h, err := history.Open(context.Background(), js, subjects, "", history.Config{})
			if err != nil {
				t.Fatal(err)
			}
			st, err := h.Load(context.Background(), "default", "stop")
			if err != nil {
				t.Fatal(err)
			}
			users, results := 0, map[string]int{}
			for _, msg := range st.Messages() {
				switch msg := msg.(type) {
				case *agentfleet.UserMessage:
					users++
				case *agentfleet.ToolResultMessage:
					results[msg.ToolCallID]++
				}
			}
			if users != 1 || len(results) != 1 {
				t.Errorf("history holds %d user messages and tool results %v; want one of each", users, results)
			}
			for id, n := range results {
				if n != 1 {
					t.Errorf("tool result %s stored %d times", id, n)
				}
			}
		})
	}
}
