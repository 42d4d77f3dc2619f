package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats-server/v2/server"
)

// startFleet starts what `orchestrator --workers 1` runs, in the test
// process: an embedded NATS server with JetStream, a tool worker with the
// built-in tools, and a durable orchestrator with the offline model. It
// returns the URL clients connect to.
func startFleet(t *testing.T) string {
	t.Helper()
	return startFleetWith(t, nil)
}

// startFleetWith is startFleet with the agents of profiles (nil: the
// default agent).
func startFleetWith(t *testing.T, profiles []orchestrator.Profile) string {
	t.Helper()
	return startFleetModel(t, profiles, llm.Offline{})
}

// startFleetModel is startFleetWith with model answering.
func startFleetModel(t *testing.T, profiles []orchestrator.Profile, model loop.Model) string {
	t.Helper()
	return startFleetConfig(t, orchestrator.Config{Model: model, ModelName: llm.OfflineName, Profiles: profiles})
}

// startFleetConfig is startFleet with an orchestrator of cfg, durable and
// quiet.
func startFleetConfig(t *testing.T, cfg orchestrator.Config) string {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := bustest.MustRunNATS(t)
	w, err := worker.Start(bustest.MustConnect(t, s), worker.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	cfg.Logger, cfg.Durable = quiet, true
	o, err := orchestrator.New(bustest.MustConnect(t, s), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.Close(ctx); err != nil {
			t.Errorf("orchestrator close: %v", err)
		}
	})
	return s.ClientURL()
}

// output is a writer that tests can wait on: waitFor returns once the text
// written holds a substring.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed at every write
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	close(o.changed)
	o.changed = make(chan struct{})
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output holds substr n times.
func (o *output) waitFor(t *testing.T, substr string, n int) {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		o.mu.Lock()
		got, changed := strings.Count(o.buf.String(), substr), o.changed
		o.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("output never held %q %d time(s):\n%s", substr, n, o.String())
		}
	}
}

// prog is one agentctl program, driven in-process.
type prog struct {
	*Main
	stdout, stderr *output
}

func newProg(t *testing.T, url string, stdin io.Reader, args ...string) *prog {
	t.Helper()
	p := &prog{Main: NewMain(), stdout: newOutput(), stderr: newOutput()}
	p.Stdout, p.Stderr = p.stdout, p.stderr
	p.Stdin = stdin
	if stdin == nil {
		p.Stdin = strings.NewReader("")
	}
	if err := p.ParseFlags(append([]string{"--nats-url", url}, args...)); err != nil {
		t.Fatalf("agentctl %s: %v", strings.Join(args, " "), err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// run runs agentctl with args to its end and returns its output.
func run(t *testing.T, url string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	p := newProg(t, url, nil, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = p.Run(ctx)
	return p.stdout.String(), p.stderr.String(), err
}

func TestAsk(t *testing.T) {
	url := startFleet(t)
	stdout, stderr, err := run(t, url, "ask", "default", "a1", "what", "is", "2*(3+4)?")
	if err != nil {
		t.Fatalf("err = %v, stderr %s", err, stderr)
	}
	if got, want := stdout, "calculator: 14\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}

	stdout, _, err = run(t, url, "ask", "--json", "default", "a1", "echo raw")
	if err != nil {
		t.Fatal(err)
	}
	var final agentfleet.AssistantMessage
	if err := json.Unmarshal([]byte(stdout), &final); err != nil {
		t.Fatalf("--json output %q: %v", stdout, err)
	}
	if final.StopReason != agentfleet.StopReasonStop || final.Model != llm.OfflineName || final.RunID == "" || agentfleet.JoinText(final.Content) != "echo: raw" {
		t.Errorf("--json answer = %+v", final)
	}

	// A text of "-" is read from standard input.
	p := newProg(t, url, strings.NewReader("echo from stdin\n"), "ask", "default", "a1", "-")
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := p.stdout.String(), "echo: from stdin\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}

	// The orchestrator rejects an unknown agent: the answer is an error.
	stdout, stderr, err = run(t, url, "ask", "nobody", "a1", "hello")
	if code, ok := errors.AsType[exitCode](err); !ok || code != 1 {
		t.Errorf("err = %v, want exit status 1", err)
	}
	if stdout != "" || !strings.Contains(stderr, "stop_reason: error: ") || !strings.Contains(stderr, `unknown agent "nobody"`) {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
}

// TestSendAndTail follows one session's events while a message sent to it
// runs, readable and raw.
func TestSendAndTail(t *testing.T) {
	url := startFleet(t)
	type tailing struct {
		p    *prog
		stop context.CancelFunc
		done chan error
	}
	tail := func(args ...string) *tailing {
		ctx, cancel := context.WithCancel(context.Background())
		tl := &tailing{p: newProg(t, url, nil, append([]string{"tail"}, args...)...), stop: cancel, done: make(chan error, 1)}
		go func() { tl.done <- tl.p.Run(ctx) }()
		tl.p.stderr.waitFor(t, "following agent.events.", 1)
		return tl
	}
	readable := tail("default", "s1")
	raw := tail("--json", "*", "s1")
	other := tail("default", "s2")

	if stdout, stderr, err := run(t, url, "send", "default", "s1", "echo hello tail"); err != nil || stdout != "" {
		t.Fatalf("send: err %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	readable.p.stdout.waitFor(t, " run.end ", 1)
	raw.p.stdout.waitFor(t, `"type":"run.end"`, 1)
	for _, tl := range []*tailing{readable, raw, other} {
		tl.stop()
		if err := <-tl.done; err != nil {
			t.Errorf("tail: %v", err)
		}
	}

	lines := strings.Split(strings.TrimSpace(readable.p.stdout.String()), "\n")
	stamp := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} default/s1 `)
	for _, l := range lines {
		if !stamp.MatchString(l) {
			t.Errorf("line %q does not start with HH:MM:SS.mmm default/s1", l)
		}
	}
	text := readable.p.stdout.String()
	want := []string{
		" run.start\n",
		" turn.start turn 1\n",
		` tool.start echo {"text":"hello tail"}` + "\n",
		" tool.end echo ",
		" message.update \"echo: \"\n",
		" run.end stop\n",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("tail output lacks %q after byte %d:\n%s", w, at, text)
		}
		at += i + len(w)
	}
	if !regexp.MustCompile(` tool\.end echo [0-9.]+(ms|s) ok worker=toolworker/`).MatchString(text) {
		t.Errorf("tool.end line without duration, outcome and worker:\n%s", text)
	}

	for _, l := range strings.Split(strings.TrimSpace(raw.p.stdout.String()), "\n") {
		var e agentfleet.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Session != "s1" {
			t.Errorf("--json line %q: %v", l, err)
		}
	}
	if got := other.p.stdout.String(); got != "" {
		t.Errorf("the tail of session s2 printed:\n%s", got)
	}
}

func TestTools(t *testing.T) {
	url := startFleet(t)
	stdout, _, err := run(t, url, "tools")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"calculator — Calculator  [parallel, read-only, idempotent, 1 worker]\n",
		"    expression  string, required — ",
		"sleep — Sleep  [parallel, idempotent, timeout 10m5s, 1 worker]\n",
		"    ms  integer, required, 0 to 600000 — How long to sleep, in milliseconds\n",
		"get_time — ",
		"http_fetch — ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tools output lacks %q:\n%s", want, stdout)
		}
	}

	stdout, _, err = run(t, url, "tools", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var defs []jsonTool
	if err := json.Unmarshal([]byte(stdout), &defs); err != nil {
		t.Fatal(err)
	}
	var calc *jsonTool
	for i := range defs {
		if defs[i].Name == "calculator" {
			calc = &defs[i]
		}
	}
	if calc == nil || len(calc.Workers) != 1 || !strings.Contains(string(calc.InputSchema), `"expression"`) {
		t.Errorf("--json calculator = %+v", calc)
	}

	// No process of this fleet serves scripts, so none created the bucket
	// of the scripted tools, and agentctl does not create it either.
	_, _, err = run(t, url, "tools", "export", "calculator")
	if err == nil || !strings.Contains(err.Error(), "agentctl tools export: no scripted tools are stored on this NATS server: the KV bucket agent_tools does not exist") {
		t.Errorf("export without a bucket: err = %v", err)
	}
}

func TestCall(t *testing.T) {
	url := startFleet(t)
	stdout, stderr, err := run(t, url, "call", "calculator", `{"expression":"2+3"}`)
	if err != nil || stdout != "5\n" {
		t.Errorf("call calculator: err %v, stdout %q, stderr %q", err, stdout, stderr)
	}

	stdout, _, err = run(t, url, "call", "sleep", `{"ms": 350}`)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) < 3 || lines[len(lines)-1] != "slept 350 ms" {
		t.Fatalf("call sleep printed %q, want progress lines and then the result", stdout)
	}
	for _, l := range lines[:len(lines)-1] {
		if !regexp.MustCompile(`^… \{"elapsed_ms":\d+,"total_ms":350\}$`).MatchString(l) {
			t.Errorf("progress line %q", l)
		}
	}

	stdout, _, err = run(t, url, "call", "--json", "echo", `{"text":"raw"}`)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Tool, Worker string
		IsError      bool `json:"is_error"`
		Result       agentfleet.ToolResult
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Tool != "echo" || res.IsError || !strings.HasPrefix(res.Worker, "toolworker/") || agentfleet.JoinText(res.Result.Content) != "raw" {
		t.Errorf("--json: %q (%v)", stdout, err)
	}

	// An error result is printed on stderr and fails the command.
	stdout, stderr, err = run(t, url, "call", "calculator", `{"expression":"2+"}`)
	if code, ok := errors.AsType[exitCode](err); !ok || code != 1 || stdout != "" || !strings.HasPrefix(stderr, "error: calculator: ") {
		t.Errorf("bad expression: err %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	// Arguments are checked against the tool's schema before the call.
	_, _, err = run(t, url, "call", "calculator", `{}`)
	if err == nil || !strings.Contains(err.Error(), `agentctl call: tool calculator: arguments invalid: at "/": missing property 'expression'`) {
		t.Errorf("missing argument: err = %v", err)
	}
	_, _, err = run(t, url, "--timeout", "10s", "call", "nosuch", `{}`)
	if err == nil || !strings.Contains(err.Error(), "no worker serves the tool") || !strings.Contains(err.Error(), "the fleet serves: calculator, echo, get_time") {
		t.Errorf("unknown tool: err = %v", err)
	}
}

// TestChat chats two lines from a script: each answer and its tool calls
// show, in order.
func TestChat(t *testing.T) {
	url := startFleet(t)
	p := newProg(t, url, strings.NewReader("what is 2+3?\n\necho hello chat\n"), "chat", "default", "c1")
	if err := p.Run(context.Background()); err != nil {
		t.Fatalf("chat: %v\n%s", err, p.stderr)
	}
	out := p.stdout.String()
	want := []string{
		"> ",
		`→ calculator {"expression":"2+3"}` + "\n",
		"← calculator ",
		" ok\n",
		"calculator: 5\n",
		"> ",
		`→ echo {"text":"hello chat"}` + "\n",
		"← echo ",
		"echo: hello chat\n",
		"> \n",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(out[at:], w)
		if i < 0 {
			t.Fatalf("chat output lacks %q after byte %d:\n%s", w, at, out)
		}
		at += i + len(w)
	}
	if err := p.stderr.String(); !strings.Contains(err, "chat with agent default, session c1.") {
		t.Errorf("stderr = %q", err)
	}
}

// TestChatInterrupt presses Ctrl-C during a run, which aborts it, and then
// twice during the next, which exits.
func TestChatInterrupt(t *testing.T) {
	url := startFleet(t)
	stdin, typing := io.Pipe()
	t.Cleanup(func() { typing.Close() })
	interrupt := make(chan os.Signal, 2)
	p := newProg(t, url, stdin, "chat", "default")
	p.Interrupt = interrupt
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()

	if _, err := io.WriteString(typing, "sleep 10s\n"); err != nil {
		t.Fatal(err)
	}
	p.stdout.waitFor(t, "→ sleep {\"ms\":10000}\n", 1)
	interrupt <- os.Interrupt
	p.stderr.waitFor(t, "[aborted", 1)
	p.stdout.waitFor(t, "> ", 2)
	if !strings.Contains(p.stdout.String(), "← sleep ") {
		t.Errorf("no tool.end line for the aborted sleep:\n%s", p.stdout)
	}

	if _, err := io.WriteString(typing, "sleep 10s\n"); err != nil {
		t.Fatal(err)
	}
	p.stdout.waitFor(t, "→ sleep {\"ms\":10000}\n", 2)
	interrupt <- os.Interrupt
	interrupt <- os.Interrupt
	if code, ok := errors.AsType[exitCode](<-done); !ok || code != 130 {
		t.Errorf("second Ctrl-C: err = %v, want exit status 130", code)
	}
}

// TestNoOrchestrator talks to a NATS server where nobody listens.
func TestNoOrchestrator(t *testing.T) {
	s, err := busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: "127.0.0.1:0", NoJetStream: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	for cmd, subject := range map[string]string{"ask": "agent.ask.default.s", "send": "agent.in.default.s", "steer": "agent.steer.default.s"} {
		_, _, err := run(t, s.ClientURL(), cmd, "default", "s", "hello")
		if want := "agentctl " + cmd + ": nobody listens on " + subject + ":"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", cmd, err, want)
		}
	}
	_, _, err = run(t, s.ClientURL(), "--timeout", "100ms", "tools")
	if err == nil || !strings.Contains(err.Error(), "no tool worker") {
		t.Errorf("tools: err = %v", err)
	}
	_, _, err = run(t, s.ClientURL(), "tools", "history", "x")
	if err == nil || !strings.Contains(err.Error(), "agentctl tools history: JetStream is not enabled on this NATS server") {
		t.Errorf("tools history: err = %v", err)
	}
}

// TestRoles runs the fleet under the users of deploy/nats/nats.conf: the
// durable orchestrator as orchestrator, a worker as toolworker, and
// agentctl as client, dashboard and the others. What a role may do works;
// what it may not fails at once with an error that says so.
func TestRoles(t *testing.T) {
	conf := filepath.Join("..", "..", "deploy", "nats", "nats.conf")
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	passwords := map[string]string{}
	for _, u := range opts.Users {
		passwords[u.Username] = u.Password
	}
	s, err := busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir(), ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	// The servers' logs would show the permission violations they meet.
	serverLogs := newOutput()
	logger := slog.New(slog.NewTextHandler(serverLogs, nil))
	connect := func(user string) *bus.Conn {
		nc, err := bus.Connect(bus.ConnectConfig{URL: s.ClientURL(), Name: user, User: user, Password: passwords[user], Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	w, err := worker.Start(connect("toolworker"), worker.Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	o, err := orchestrator.New(connect("orchestrator"), orchestrator.Config{
		Model: llm.Offline{}, ModelName: llm.OfflineName, Logger: logger, Durable: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o.Close(ctx)
	})
	as := func(user string, args ...string) []string {
		return append([]string{"--user", user, "--password", passwords[user]}, args...)
	}

	stdout, stderr, err := run(t, s.ClientURL(), as("client", "ask", "default", "r1", "what is 2+3?")...)
	if err != nil || stdout != "calculator: 5\n" {
		t.Errorf("client ask: err %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	// A person's own user: alice, with her own inbox space, whether the
	// prefix is given or comes from her user name.
	for _, args := range [][]string{as("alice", "--inbox-prefix", "_INBOX.alice", "ask", "default", "a1", "what is 2+3?"), as("alice", "ask", "default", "a2", "what is 2+3?")} {
		stdout, stderr, err := run(t, s.ClientURL(), args...)
		if err != nil || stdout != "calculator: 5\n" {
			t.Errorf("agentctl %s: err %v, stdout %q, stderr %q", strings.Join(args[4:], " "), err, stdout, stderr)
		}
	}
	stdout, _, err = run(t, s.ClientURL(), as("client", "tools")...)
	if err != nil || !strings.Contains(stdout, "calculator — Calculator") {
		t.Errorf("client tools: err %v, stdout %q", err, stdout)
	}
	// The agent's own tools come from the orchestrator, on a subject the
	// client role may ask on.
	stdout, _, err = run(t, s.ClientURL(), as("client", "tools", "default")...)
	if err != nil || !strings.Contains(stdout, "list_tools — ") || !strings.Contains(stdout, "calculator — Calculator") {
		t.Errorf("client tools default: err %v, stdout %q", err, stdout)
	}
	// A person reads a session's records through the fleet's export of
	// the ask subjects, with no JetStream of their own.
	stdout, _, err = run(t, s.ClientURL(), as("alice", "history", "default", "a2")...)
	if err != nil || !strings.Contains(stdout, "user      what is 2+3?") || !strings.Contains(stdout, "end       calculator: 5") {
		t.Errorf("alice history: err %v, stdout %q", err, stdout)
	}
	// Read access reads stored records too: the dashboard role and bob,
	// a viewer.
	for _, user := range []string{"dashboard", "bob"} {
		stdout, stderr, err := run(t, s.ClientURL(), as(user, "--timeout", "5s", "history", "default", "a2")...)
		if err != nil || !strings.Contains(stdout, "user      what is 2+3?") {
			t.Errorf("%s history: err %v, stdout %q, stderr %q", user, err, stdout, stderr)
		}
	}
	stdout, _, err = run(t, s.ClientURL(), as("orchestrator", "call", "echo", `{"text":"direct"}`)...)
	if err != nil || stdout != "direct\n" {
		t.Errorf("orchestrator call: err %v, stdout %q", err, stdout)
	}
	// agentctl mcp as a client lists the tools and asks, but may not call
	// a tool directly, and says so at once.
	mctx, stopMCP := context.WithTimeout(context.Background(), 30*time.Second)
	msess, _ := startMCP(t, mctx, s.ClientURL(), nil, as("client", "mcp")...)
	res, err := msess.CallTool(mctx, &mcp.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": "1+1"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), `may not publish on agent.call.default.`) {
		t.Errorf("client mcp calculator: err %v, result %+v", err, res)
	}
	res, err = msess.CallTool(mctx, &mcp.CallToolParams{Name: "ask_default", Arguments: map[string]any{"message": "what is 2+3?"}})
	if err != nil || res.IsError || text(res) != "calculator: 5" {
		t.Errorf("client mcp ask_default: err %v, result %q", err, text(res))
	}
	msess.Close()
	stopMCP()
	// A dashboard follows what a client's message does, through the
	// durable input stream.
	ctx, stopTail := context.WithCancel(context.Background())
	dash := newProg(t, s.ClientURL(), nil, as("dashboard", "tail", "default", "r2")...)
	tailDone := make(chan error, 1)
	go func() { tailDone <- dash.Run(ctx) }()
	dash.stderr.waitFor(t, "following ", 1)
	if _, stderr, err := run(t, s.ClientURL(), as("client", "send", "default", "r2", "echo via the stream")...); err != nil {
		t.Fatalf("client send: %v %s", err, stderr)
	}
	dash.stdout.waitFor(t, " run.end stop", 1)
	stopTail()
	if err := <-tailDone; err != nil {
		t.Errorf("dashboard tail: %v", err)
	}
	if !strings.Contains(dash.stdout.String(), ` tool.start echo {"text":"via the stream"}`) {
		t.Errorf("dashboard tail:\n%s", dash.stdout)
	}

	// A client reads histories, so it may diff runs, but may not fork:
	// its replay is refused at the fork, and forks nothing.
	stdout, _, err = run(t, s.ClientURL(), as("client", "history", "--json", "default", "r1")...)
	var r1 historyJSON
	if err != nil || json.Unmarshal([]byte(stdout), &r1) != nil || len(r1.Records) == 0 {
		t.Fatalf("client history r1: %v %q", err, stdout)
	}
	stdout, _, err = run(t, s.ClientURL(), as("client", "diff", "default", "r1", r1.Records[0].RunID, "r1", r1.Records[0].RunID)...)
	if err != nil || !strings.Contains(stdout, "the runs are the same") {
		t.Errorf("client diff: err %v, stdout %q", err, stdout)
	}
	denied := []struct {
		args []string
		want string
	}{
		{as("client", "replay", "--into", "r1x", "default", "r1", r1.Records[0].RunID), `NATS user "client" lacks the permission: nats: permissions violation: Permissions Violation for Publish to "agent.fork.default.r1"`},
		{as("dashboard", "send", "default", "s", "hi"), `NATS user "dashboard" lacks the permission: nats: permissions violation: Permissions Violation for Publish to "agent.in.default.s"`},
		{as("dashboard", "ask", "default", "s", "hi"), `Permissions Violation for Publish to "agent.ask.default.s"`},
		{as("dashboard", "abort", "default", "s"), `Permissions Violation for Publish to "agent.abort.default.s"`},
		{as("toolworker", "tail"), `Permissions Violation for Subscription to "agent.events.*.*.>"`},
		{as("client", "call", "echo", `{"text":"x"}`), `Permissions Violation for Publish to "agent.tool.echo"`},
		{as("client", "tools", "export", "x"), `NATS user "client" lacks the permission: nats: permissions violation: Permissions Violation for Publish to "$JS.API.STREAM.INFO.KV_agent_tools"`},
		// Nobody reads another user's replies: not in the shared inbox
		// space, not in bob's.
		{as("alice", "--inbox-prefix", "_INBOX", "ask", "default", "a3", "hi"), `NATS user "alice" lacks the permission: nats: permissions violation: Permissions Violation for Subscription to "_INBOX.`},
		{as("alice", "--inbox-prefix", "_INBOX.bob", "ask", "default", "a3", "hi"), `Permissions Violation for Subscription to "_INBOX.bob.`},
		{as("alice", "--inbox-prefix", "_INBOX.>", "ask", "default", "a3", "hi"), `inbox prefix "_INBOX.>": has a wildcard (">")`},
		// bob may only watch.
		{as("bob", "ask", "default", "a3", "hi"), `NATS user "bob" lacks the permission: nats: permissions violation: Permissions Violation for Publish to "agent.ask.default.a3"`},
		{as("bob", "approve", "default", "a3", "c1"), `Permissions Violation for Publish to "agent.approve.default.a3"`},
		// A delete is an operator's: no person's role may send one.
		{as("client", "delete", "default", "a2"), `Permissions Violation for Publish to "agent.delete.default.a2"`},
		{as("alice", "delete", "default", "a2"), `Permissions Violation for Publish to "agent.delete.default.a2"`},
	}
	for _, tt := range denied {
		start := time.Now()
		_, _, err := run(t, s.ClientURL(), tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("agentctl %s: err = %v, want %q", strings.Join(tt.args[4:], " "), err, tt.want)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("agentctl %s took %v to fail", strings.Join(tt.args[4:], " "), d)
		}
	}
	if logs := serverLogs.String(); strings.Contains(logs, "ermission") {
		t.Errorf("the orchestrator or the worker met a permission violation:\n%s", logs)
	}
}

func TestBadArguments(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "agentctl: no command given"},
		{[]string{"frobnicate"}, `agentctl: unknown command "frobnicate" (commands: ask, send, steer, abort, approve, fork, tail, cost, chat, history, tools, call, dashboard, mcp, replay, diff, delete)`},
		{[]string{"cost", "a", "b"}, "agentctl cost: want [agent], got 2 arguments"},
		{[]string{"cost", "a.b"}, `agentctl cost: agent name "a.b" may hold only`},
		{[]string{"cost", "--since", "-1h"}, "agentctl cost: --since -1h0m0s is negative"},
		{[]string{"cost", "--since", "soon"}, `agentctl cost: invalid value "soon" for flag -since`},
		{[]string{"ask", "default", "a b", "hi"}, `agentctl ask: session name "a b" may hold only letters, digits, '-' and '_'`},
		{[]string{"ask", "de.fault", "s", "hi"}, `agentctl ask: agent name "de.fault" may hold only letters, digits, '-' and '_'`},
		{[]string{"ask", "default", "s"}, "agentctl ask: want <agent> <session> <text>, got 2 argument(s)"},
		{[]string{"send", "--bogus", "default", "s", "hi"}, "agentctl send: flag provided but not defined: -bogus"},
		{[]string{"send", "--json", "default", "s", "hi"}, "agentctl send: flag provided but not defined: -json"},
		{[]string{"abort", "default"}, "agentctl abort: want <agent> <session> [reason], got 1 argument(s)"},
		{[]string{"tail", "a>"}, `agentctl tail: agent name "a>" may hold only`},
		{[]string{"tail", "*", "s", "x"}, "agentctl tail: want [agent [session]], got 3 arguments"},
		{[]string{"chat"}, "agentctl chat: want <agent> [session], got 0 argument(s)"},
		{[]string{"chat", "default", "s*"}, `agentctl chat: session name "s*" may hold only`},
		{[]string{"tools", "a", "b"}, "agentctl tools: want [agent], got 2 arguments"},
		{[]string{"history", "default"}, "agentctl history: want <agent> <session>, got 1 argument(s)"},
		{[]string{"history", "default", "s", "x"}, "agentctl history: want <agent> <session>, got 3 argument(s)"},
		{[]string{"history", "default", "s>"}, `agentctl history: session name "s>" may hold only`},
		{[]string{"history", "--revision", "2", "default", "s"}, "agentctl history: flag provided but not defined: -revision"},
		{[]string{"tools", "export"}, "agentctl tools export: want <name>, got 0 arguments"},
		{[]string{"tools", "history", "a", "b"}, "agentctl tools history: want <name>, got 2 arguments"},
		{[]string{"tools", "delete", "a.b"}, `agentctl tools delete: tool name "a.b" may hold only`},
		{[]string{"tools", "import"}, "agentctl tools import: want <file> (- for standard input), got 0 arguments"},
		{[]string{"tools", "export", "--revision", "x", "a"}, `agentctl tools: invalid value "x" for flag -revision`},
		{[]string{"tools", "history", "--revision", "2", "a"}, "agentctl tools history: flag provided but not defined: -revision"},
		{[]string{"tools", "--replace", "export", "a"}, "agentctl tools export: flag provided but not defined: -replace"},
		{[]string{"tools", "--replace", "default"}, "agentctl tools: flag provided but not defined: -replace"},
		{[]string{"ask", "--replace", "default", "s", "hi"}, "agentctl ask: flag provided but not defined: -replace"},
		{[]string{"call"}, "agentctl call: want <tool> [json-args], got 0 argument(s)"},
		{[]string{"call", "bad tool"}, `agentctl call: tool name "bad tool" may hold only`},
		{[]string{"call", "calculator", "{bad"}, "agentctl call: arguments {bad are not a JSON object: invalid character 'b'"},
		{[]string{"call", "calculator", "[1]"}, "agentctl call: arguments [1] are not a JSON object"},
		{[]string{"call", "calculator", "null"}, "agentctl call: arguments null are not a JSON object"},
		{[]string{"call", "calculator", "{} {}"}, "agentctl call: arguments {} {} hold more than one JSON value"},
		{[]string{"--prefix", "a b", "tools"}, `agentctl tools: --prefix: subject prefix "a b": token "a b" may hold only`},
		{[]string{"tools", "--timeout", "-1s"}, "agentctl tools: --timeout -1s: must not be negative"},
		{[]string{"--log-level", "loud", "tools"}, `agentctl tools: --log-level "loud": want debug, info, warn or error`},
		{[]string{"replay", "default", "s"}, "agentctl replay: want <agent> <session> <run>, got 2 argument(s)"},
		{[]string{"replay", "default", "s.x", "r1"}, `agentctl replay: session name "s.x" may hold only`},
		{[]string{"replay", "default", "s", "r 1"}, `agentctl replay: run id "r 1" is empty, longer than 256 bytes or has white space`},
		{[]string{"replay", "default", "s", strings.Repeat("r", 300)}, "longer than 256 bytes"},
		{[]string{"replay", "--into", "a*b", "default", "s", "r1"}, `agentctl replay: --into: new session name "a*b" may hold only`},
		{[]string{"replay", "--into", "s", "default", "s", "r1"}, "agentctl replay: --into names the session replayed"},
		{[]string{"replay", "--model", "a b", "default", "s", "r1"}, `agentctl replay: --model: model "a b" holds white space`},
		{[]string{"replay", "--model", strings.Repeat("m", 300), "default", "s", "r1"}, "agentctl replay: --model: model of 300 bytes, the limit is 256"},
		{[]string{"replay", "--model", "b", "--profile", "p.yaml", "default", "s", "r1"}, "agentctl replay: give --model or --profile, not both"},
		{[]string{"replay", "--profile", "/nonexistent/p.yaml", "default", "s", "r1"}, "agentctl replay: --profile: open /nonexistent/p.yaml"},
		{[]string{"replay", "--at", "3", "default", "s", "r1"}, "agentctl replay: flag provided but not defined: -at"},
		{[]string{"replay", "--bogus", "default", "s", "r1"}, "agentctl replay: flag provided but not defined: -bogus"},
		{[]string{"fork", "--model", "b", "default", "s", "s2"}, "agentctl fork: flag provided but not defined: -model"},
		{[]string{"diff", "default", "s", "r1"}, "agentctl diff: want <agent> <session> <run> <other-session> [other-run], got 3 argument(s)"},
		{[]string{"diff", "default", "s", "r1", "o", "r2", "x"}, "got 6 argument(s)"},
		{[]string{"diff", "default", "s", "r1", "o>"}, `agentctl diff: other session name "o>" may hold only`},
		{[]string{"diff", "default", "s", "r1", "o", "r\n2"}, `agentctl diff: run id "r\n2" is empty`},
		{[]string{"diff", "--into", "x", "default", "s", "r1", "o"}, "agentctl diff: flag provided but not defined: -into"},
		{[]string{"delete"}, "agentctl delete: want <agent> <session>, got 0 argument(s)"},
		{[]string{"delete", "default"}, "agentctl delete: want <agent> <session>, got 1 argument(s)"},
		{[]string{"delete", "default", "s1", "s2"}, "agentctl delete: want <agent> <session>, got 3 argument(s)"},
		{[]string{"delete", "de.fault", "s1"}, `agentctl delete: agent name "de.fault" may hold only`},
		{[]string{"delete", "default", "s>"}, `agentctl delete: session name "s>" may hold only`},
		{[]string{"delete", "default", strings.Repeat("s", 129)}, "agentctl delete: session name is 129 bytes long, the limit is 128"},
		{[]string{"delete", "--at", "1", "default", "s1"}, "agentctl delete: flag provided but not defined: -at"},
	}
	for _, tt := range tests {
		m := NewMain()
		var stderr bytes.Buffer
		m.Stdout, m.Stderr = io.Discard, &stderr
		err := m.ParseFlags(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("agentctl %s: err = %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

func TestFlags(t *testing.T) {
	// Global flags before and after the command, flags between arguments,
	// and "--" before a text that starts with "-".
	m := NewMain()
	m.Stderr = io.Discard
	err := m.ParseFlags([]string{"--nats-url", "nats://a:1", "--user", "u", "ask", "--prefix", "acme.agent", "default", "--json", "s", "--", "-5", "+", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if m.NATS.URL != "nats://a:1" || m.NATS.User != "u" || m.Prefix != "acme.agent" || !m.JSON || strings.Join(m.pos, "|") != "default|s|-5|+|3" {
		t.Errorf("parsed %+v, pos %q", m.NATS, m.pos)
	}

	var stdout bytes.Buffer
	m = NewMain()
	m.Stdout, m.Stderr = &stdout, io.Discard
	if err := m.ParseFlags([]string{"help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("help: err = %v", err)
	}
	for _, c := range commands {
		if !strings.Contains(stdout.String(), "\n  "+c.name+" ") {
			t.Errorf("usage lacks %s:\n%s", c.name, stdout.String())
		}
		for _, sub := range c.subs {
			if !strings.Contains(stdout.String(), "\n  "+c.name+" "+sub.name+" "+sub.args+" ") {
				t.Errorf("usage lacks %s %s:\n%s", c.name, sub.name, stdout.String())
			}
		}
	}
	for _, f := range []string{"--json", "--id", "--revision", "--replace"} {
		if !strings.Contains(stdout.String(), "\n  "+f+" ") {
			t.Errorf("usage lacks the command flag %s", f)
		}
	}

	// The subcommands of tools take their flags anywhere, and an agent
	// name that is none of them still lists.
	m = NewMain()
	m.Stderr = io.Discard
	if err := m.ParseFlags([]string{"tools", "--revision", "3", "export", "adder"}); err != nil || m.sub == nil || m.sub.name != "export" || m.Revision != 3 || strings.Join(m.pos, "|") != "adder" {
		t.Errorf("tools --revision 3 export adder: err %v, pos %q", err, m.pos)
	}
	m = NewMain()
	m.Stderr = io.Discard
	if err := m.ParseFlags([]string{"tools", "import", "-", "--replace"}); err != nil || m.sub == nil || m.sub.name != "import" || !m.Replace || strings.Join(m.pos, "|") != "-" {
		t.Errorf("tools import - --replace: err %v, pos %q", err, m.pos)
	}
	m = NewMain()
	m.Stderr = io.Discard
	if err := m.ParseFlags([]string{"tools", "--json", "exporter"}); err != nil || m.sub != nil || strings.Join(m.pos, "|") != "exporter" {
		t.Errorf("tools --json exporter: err %v, pos %q", err, m.pos)
	}
	for _, f := range []string{"-nats-url", "-creds", "-nkey", "-user", "-password", "-token", "-tls-ca", "-tls-cert", "-tls-key", "-prefix", "-timeout"} {
		if !strings.Contains(stdout.String(), "  "+f+" ") {
			t.Errorf("usage lacks %s", f)
		}
	}
}

// TestTailSince replays a run that ended before the tail started, from the
// events the fleet keeps, then follows a new one.
func TestTailSince(t *testing.T) {
	url := startFleet(t)
	if _, stderr, err := run(t, url, "ask", "default", "late", "echo before"); err != nil {
		t.Fatalf("ask: %v %s", err, stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := newProg(t, url, nil, "tail", "--since", "1m", "default", "late")
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	p.stdout.waitFor(t, " run.end stop\n", 1) // the earlier run, replayed
	if _, stderr, err := run(t, url, "send", "default", "late", "echo after"); err != nil {
		t.Fatalf("send: %v %s", err, stderr)
	}
	p.stdout.waitFor(t, " run.end stop\n", 2) // and the new one, live
	cancel()
	if err := <-done; err != nil {
		t.Errorf("tail: %v", err)
	}
	if got := strings.Count(p.stdout.String(), " run.start\n"); got != 2 {
		t.Errorf("run.start lines = %d, want 2:\n%s", got, p.stdout.String())
	}
	m := NewMain()
	m.Stderr = newOutput()
	if err := m.ParseFlags([]string{"ask", "--since", "1m", "default", "x", "hi"}); err == nil || !strings.Contains(err.Error(), "since") {
		t.Errorf("--since on ask: err = %v", err)
	}
}

// TestSecretsNotPrinted: a password or token in the NATS URL, or in the
// environment, shows neither in the error of a connection to a server
// that is not there, nor in the logs, nor in the usage.
func TestSecretsNotPrinted(t *testing.T) {
	const secret = "Pa55w0rdOfAlice"
	addr := bustest.FreeAddr(t)
	t.Setenv("NATS_PASSWORD", secret+"Env")
	for _, url := range []string{"nats://alice:" + secret + "@" + addr, "nats://" + secret + "@" + addr, "nats://alice:" + secret + "@" + addr + ":bad"} {
		stdout, stderr, err := run(t, url, "ask", "default", "s", "hi")
		if err == nil {
			t.Fatalf("%s: connected to nothing", url)
		}
		for what, text := range map[string]string{"error": err.Error(), "stdout": stdout, "stderr": stderr} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s shows the secret: %s", what, text)
			}
		}
		if !strings.Contains(err.Error(), "xxxxx@") {
			t.Errorf("the error does not name the server: %v", err)
		}
	}
	// A password file that is missing or empty, or given beside a
	// password, is refused before any connection, saying which.
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--user", "alice", "--password-file", empty, "ask", "default", "s", "hi"}, "nats: user alice: password file " + empty + " is empty"},
		{[]string{"--user", "alice", "--password-file", empty + ".missing", "ask", "default", "s", "hi"}, "nats: user alice: password file: open " + empty + ".missing"},
		{[]string{"--password-file", empty, "ask", "default", "s", "hi"}, "password file " + empty + " given without a user"},
		{[]string{"--user", "alice", "--password", "x", "--password-file", empty, "ask", "default", "s", "hi"}, "both a password and a password file"},
	} {
		t.Setenv("NATS_PASSWORD", "")
		_, _, err := run(t, "nats://"+addr, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("agentctl %s: err = %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
	t.Setenv("NATS_URL", "nats://alice:"+secret+"@"+addr)
	p := &prog{Main: NewMain(), stdout: newOutput(), stderr: newOutput()}
	p.Stdout, p.Stderr = p.stdout, p.stderr
	p.ParseFlags([]string{"--help"})
	if usage := p.stderr.String() + p.stdout.String(); !strings.Contains(usage, "-password") || strings.Contains(usage, secret) {
		t.Errorf("the usage shows the secret, or no flags:\n%s", usage)
	}
}
