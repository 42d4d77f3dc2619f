package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/a2aserver"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsPeers is the directory of the A2A JavaScript SDK the tests run.
const jsPeers = "../../internal/a2aserver/testdata/npm"

// jsClient is the A2A JavaScript SDK's client, driven one command a line
// (testdata/npm/client.mjs).
type jsClient struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func startJSClient(t *testing.T, token string) *jsClient {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed, so the A2A JavaScript SDK is not tested")
	}
	if _, err := os.Stat(filepath.Join(jsPeers, "node_modules", "@a2a-js", "sdk")); err != nil {
		t.Skip("the A2A JavaScript SDK is not installed: run (cd internal/a2aserver/testdata/npm && npm ci --no-audit --no-fund)")
	}
	cmd := exec.Command("node", "client.mjs")
	cmd.Dir = jsPeers
	cmd.Env = append(os.Environ(), "A2A_TOKEN="+token)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	return &jsClient{t: t, in: in, out: sc}
}

// jsAnswer is what client.mjs answers.
type jsAnswer struct {
	OK       bool      `json:"ok"`
	Error    string    `json:"error"`
	Name     string    `json:"name"`
	Security []string  `json:"security"`
	Stream   bool      `json:"streaming"`
	Task     *jsTask   `json:"task"`
	Events   []jsEvent `json:"events"`
}

type jsTask struct {
	ID, ContextID, State, Status string
	Artifacts                    []string
	History                      int
}

type jsEvent struct {
	Kind, State, Text, ID string
}

func (c *jsClient) do(cmd map[string]any) *jsAnswer {
	c.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	if !c.out.Scan() {
		c.t.Fatalf("the JS client ended: %v", c.out.Err())
	}
	var a jsAnswer
	if err := json.Unmarshal(c.out.Bytes(), &a); err != nil {
		c.t.Fatalf("the JS client answered %s: %v", c.out.Bytes(), err)
	}
	c.t.Logf("%s → %s", b, c.out.Bytes())
	return &a
}

func (c *jsClient) must(cmd map[string]any) *jsAnswer {
	c.t.Helper()
	a := c.do(cmd)
	if !a.OK {
		c.t.Fatalf("%v: %s", cmd, a.Error)
	}
	return a
}

var a2aURL = regexp.MustCompile(`A2A server" url=http://([0-9.:]+)/a2a`)

// TestA2AJavaScriptClient is the A2A JavaScript SDK's client (its 1.0
// client through its 0.3 compatibility layer) against two orchestrator
// processes on the offline model: the card, a send answered with a
// completed task, a streamed task, tasks/get from the other process, a
// cancel of a sleeping task; then the owner of two sessions is killed
// with SIGKILL, one with a task at work (a sleep) and one waiting for
// approval: the survivor's tasks/resubscribe follows the first to its
// completion and shows the second input-required, and a message
// "approve" on that task completes it there. Every state comes from the
// stored history.
func TestA2AJavaScriptClient(t *testing.T) {
	js := startJSClient(t, "")
	srv := bustest.MustRunNATS(t)
	nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	config := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(config, []byte("agents:\n  - name: default\n  - name: ops\n    approve: [echo]\n"), 0o644)
	args := "--nats-url " + srv.ClientURL() + " --config " + config + " --workers 1 --ack-wait 1s --lease-ttl 1s --log-level info --http 127.0.0.1:0 --dashboard=false --serve-mcp=false"
	var ids, bases []string
	procs := map[string]*exec.Cmd{}
	for range 2 {
		cmd, logs, _ := startLogged(t, args, "A2A server")
		id, addr := servingID.FindStringSubmatch(logs.String()), a2aURL.FindStringSubmatch(logs.String())
		if id == nil || addr == nil {
			t.Fatalf("no id or A2A address in the log:\n%s", logs)
		}
		procs[id[1]] = cmd
		ids, bases = append(ids, id[1]), append(bases, "http://"+addr[1])
	}
	jsm, _ := jetstream.New(nc)
	owners := partition.Assign(ids, bus.Partitions)
	bustest.Eventually(t, "the partitions shared as the table says", func() bool {
		kv, err := jsm.KeyValue(context.Background(), "AGENT_PARTITIONS")
		if err != nil {
			return false
		}
		for p, want := range owners {
			e, err := kv.Get(context.Background(), strconv.Itoa(p))
			if err != nil || string(e.Value()) != want {
				return false
			}
		}
		return true
	})
	a, b := bases[0], bases[1]

	card := js.must(map[string]any{"op": "card", "base": a, "agent": "default"})
	if card.Name != "default" || !card.Stream {
		t.Errorf("card = %+v", card)
	}
	sent := js.must(map[string]any{"op": "send", "base": a, "agent": "default", "text": "what is 6*7?"})
	if sent.Task == nil || sent.Task.State != "TASK_STATE_COMPLETED" || len(sent.Task.Artifacts) != 1 || !strings.Contains(sent.Task.Artifacts[0], "42") {
		t.Fatalf("send = %+v", sent.Task)
	}
	streamed := js.must(map[string]any{"op": "send", "base": a, "agent": "default", "text": "what is 2+2?", "stream": true})
	if n := len(streamed.Events); n < 2 || streamed.Events[0].Kind != "task" || streamed.Events[n-1].State != "TASK_STATE_COMPLETED" || !strings.Contains(streamed.Events[n-1].Text, "4") {
		t.Fatalf("stream = %+v", streamed.Events)
	}
	got := js.must(map[string]any{"op": "get", "base": b, "agent": "default", "id": sent.Task.ID})
	if got.Task.State != "TASK_STATE_COMPLETED" || got.Task.ContextID != sent.Task.ContextID || got.Task.History < 2 {
		t.Errorf("get from the other process = %+v", got.Task)
	}

	// sessionOf returns a session of agent that owner holds.
	sessionOf := func(agent, owner, prefix string) string {
		for i := range 1000 {
			s := fmt.Sprintf("%s%d", prefix, i)
			if owners[bus.Partition(agent, s)] == owner {
				return s
			}
		}
		t.Fatalf("no session of %s owned by %s", agent, owner)
		return ""
	}
	sub := func(subject string) *nats.Subscription {
		s, err := nc.SubscribeSync(subject)
		if err != nil {
			t.Fatal(err)
		}
		nc.Flush()
		return s
	}
	next := func(s *nats.Subscription, what string) {
		t.Helper()
		if _, err := s.NextMsg(60 * time.Second); err != nil {
			t.Fatalf("no %s: %v", what, err)
		}
	}
	taskOf := func(agent, session, messageID string) string {
		return string(a2aserver.TaskID(session, a2aserver.MessageKey(agent, session, messageID)))
	}

	cs := sessionOf("default", ids[1], "c")
	started := sub("agent.events.default." + cs + ".tool.start")
	js.must(map[string]any{"op": "send", "base": a, "agent": "default", "text": "sleep 1 minute", "contextId": cs, "messageId": "m-cancel", "async": true})
	next(started, "tool.start of the sleep to cancel")
	canceled := js.must(map[string]any{"op": "cancel", "base": a, "agent": "default", "id": taskOf("default", cs, "m-cancel")})
	if canceled.Task.State != "TASK_STATE_CANCELED" {
		t.Errorf("cancel = %+v", canceled.Task)
	}

	victim, survivor := ids[0], b
	ws, as := sessionOf("default", victim, "w"), sessionOf("ops", victim, "p")
	started = sub("agent.events.default." + ws + ".tool.start")
	pending := sub("agent.events.ops." + as + ".tool.approval")
	js.must(map[string]any{"op": "send", "base": a, "agent": "default", "text": "sleep 3s", "contextId": ws, "messageId": "m-work", "async": true})
	js.must(map[string]any{"op": "send", "base": a, "agent": "ops", "text": "echo hello", "contextId": as, "messageId": "m-approve", "async": true})
	next(started, "tool.start of the sleep")
	next(pending, "tool.approval of the echo")
	if err := procs[victim].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	procs[victim].Wait()

	resub := js.must(map[string]any{"op": "resubscribe", "base": survivor, "agent": "default", "id": taskOf("default", ws, "m-work")})
	if n := len(resub.Events); n < 2 || resub.Events[0].Kind != "task" || resub.Events[n-1].State != "TASK_STATE_COMPLETED" {
		t.Fatalf("resubscribe of the working task after the kill = %+v", resub.Events)
	}
	approveID := taskOf("ops", as, "m-approve")
	resub = js.must(map[string]any{"op": "resubscribe", "base": survivor, "agent": "ops", "id": approveID})
	if len(resub.Events) != 1 || resub.Events[0].State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("resubscribe of the waiting task after the kill = %+v", resub.Events)
	}
	var done *jsAnswer
	deadline := time.Now().Add(60 * time.Second)
	for done == nil && time.Now().Before(deadline) {
		// The decision is taken once the survivor owns the session; until
		// then the answer may be an error, and the task still waits.
		ans := js.do(map[string]any{"op": "send", "base": survivor, "agent": "ops", "text": "approve", "contextId": as, "taskId": approveID})
		if ans.OK {
			done = ans
			break
		}
		if g := js.must(map[string]any{"op": "get", "base": survivor, "agent": "ops", "id": approveID}); g.Task.State != "TASK_STATE_INPUT_REQUIRED" {
			done = g
		}
	}
	if done == nil || done.Task == nil || done.Task.State != "TASK_STATE_COMPLETED" || !strings.Contains(strings.Join(done.Task.Artifacts, "\n"), "hello") {
		t.Fatalf("after approve = %+v", done)
	}
}

// TestA2ARemoteAgent: a profile's remote agent, the A2A JavaScript SDK's
// sample server, is a tool ask_js of the agent; the offline model's
// "ask js: stream" calls it, the remote task's status updates are the
// call's tool.update events, and its artifact is the answer.
func TestA2ARemoteAgent(t *testing.T) {
	startJSClient(t, "") // skips without node or the SDK
	cmd := exec.Command("node", "server.mjs")
	cmd.Dir = jsPeers
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "listening ") {
		t.Fatalf("the JS server did not start: %q", sc.Text())
	}
	url := "http://127.0.0.1:" + strings.TrimPrefix(sc.Text(), "listening ") + "/a2a"
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	config := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(config, []byte("agents:\n  - name: default\n    remote_agents:\n      - {name: js, url: '"+url+"'}\n"), 0o644)
	m := run(t, "--workers", "1", "--config", config)
	nc := connect(t, m)
	updates, err := nc.SubscribeSync("agent.events.default.r1.tool.update")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	final := ask(t, nc, "agent.ask.default.r1", "ask js: stream")
	if text := strings.Join(strings.Fields(fmt.Sprint(final.Content)), " "); !strings.Contains(text, "streamed answer") {
		t.Errorf("final = %+v", final)
	}
	msg, err := updates.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal("no tool.update of the remote task")
	}
	if !strings.Contains(string(msg.Data), `"a2a_state":"working"`) || !strings.Contains(string(msg.Data), `"tool_name":"ask_js"`) {
		t.Errorf("tool.update = %s", msg.Data)
	}
}
