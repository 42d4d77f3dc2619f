package hostile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// deployConf is the server configuration that operators deploy.
var deployConf = filepath.Join("..", "..", "deploy", "nats", "nats.conf")

// bin holds the orchestrator and toolworker binaries, built once.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentfleet-hostile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../../cmd/orchestrator", "../../cmd/toolworker")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fleet is a nats-server running the shipped configuration, with one user
// added, spy, who has every right in the fleet's account; an orchestrator
// and a tool worker as child processes, each connected as its own user; and
// the model they use.
type fleet struct {
	srv       *server.Server
	passwords map[string]string
	model     *httptest.Server
}

func startFleet(t *testing.T, orchestratorArgs ...string) *fleet {
	t.Helper()
	opts, err := server.ProcessConfigFile(deployConf)
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.StoreDir = t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	f := &fleet{passwords: map[string]string{"spy": "spy"}}
	var fleetAccount *server.Account
	for _, u := range opts.Users {
		f.passwords[u.Username] = u.Password
		if u.Username == "orchestrator" {
			fleetAccount = u.Account
		}
	}
	if fleetAccount == nil {
		t.Fatal("the shipped configuration has no user orchestrator")
	}
	opts.Users = append(opts.Users, &server.User{Username: "spy", Password: "spy", Account: fleetAccount})
	if f.srv, err = server.NewServer(opts); err != nil {
		t.Fatal(err)
	}
	go f.srv.Start()
	if !f.srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(f.srv.Shutdown)
	f.model = httptest.NewServer(http.HandlerFunc(model))
	t.Cleanup(f.model.Close)

	if len(orchestratorArgs) == 0 {
		orchestratorArgs = []string{"--http", ""}
	}
	f.start(t, "orchestrator", append([]string{"--user", "orchestrator", "--llm-stream=false", "--lease-ttl", "3s"}, orchestratorArgs...)...)
	f.start(t, "toolworker", "--user", "toolworker", "--tools", "echo", "--scripts")
	nc := f.connect(t, "client")
	f.waitServing(t, nc)
	return f
}

// start runs a program of bin against the server as a child process, with
// the password of its --user, and stops it with SIGTERM when the test ends.
func (f *fleet) start(t *testing.T, name string, args ...string) {
	t.Helper()
	user := ""
	for i, a := range args {
		if a == "--user" && i+1 < len(args) {
			user = args[i+1]
		}
	}
	cmd := exec.Command(filepath.Join(bin, name), append([]string{"--nats-url", f.srv.ClientURL(), "--connect-retry", "30s"}, args...)...)
	cmd.Env = append(os.Environ(), "NATS_PASSWORD="+f.passwords[user], "OPENAI_BASE_URL="+f.model.URL+"/v1", "OPENAI_API_KEY=k", "OPENAI_MODEL=m")
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, log.String())
		}
	})
}

// connect connects as user.
func (f *fleet) connect(t *testing.T, user string) *nats.Conn {
	t.Helper()
	// Each user of the shipped configuration reads only its own inbox
	// space, _INBOX.<user>.
	nc, err := nats.Connect(f.srv.ClientURL(), nats.UserInfo(user, f.passwords[user]), nats.CustomInboxPrefix("_INBOX."+user),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// waitServing waits until an ask of the default agent is answered.
func (f *fleet) waitServing(t *testing.T, nc *nats.Conn) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, err := nc.Request("agent.ask.default.ready", []byte("hello"), 5*time.Second)
		if err == nil {
			var a struct {
				Content []struct{ Text string } `json:"content"`
			}
			if json.Unmarshal(m.Data, &a) == nil && len(a.Content) > 0 && a.Content[0].Text == "echo: hello" {
				return
			}
			t.Fatalf("the readiness ask was answered %s", m.Data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fleet does not answer asks: %v", err)
		}
	}
}

// ask sends text to a session of the default agent and returns the text of
// the answer.
func ask(t *testing.T, nc *nats.Conn, session, text string) string {
	t.Helper()
	m, err := nc.Request("agent.ask.default."+session, []byte(text), 30*time.Second)
	if err != nil {
		t.Fatalf("ask %q: %v", text, err)
	}
	var a struct {
		Content []struct{ Text string } `json:"content"`
		Error   string                  `json:"error_message"`
	}
	if err := json.Unmarshal(m.Data, &a); err != nil {
		t.Fatalf("ask %q answered %s", text, m.Data)
	}
	if a.Error != "" || len(a.Content) == 0 {
		t.Fatalf("ask %q answered %s", text, m.Data)
	}
	return a.Content[0].Text
}

// model answers chat completions (not streamed) as a pure function of the
// last message: a user's "call <tool> <json>" asks for that tool call; a
// tool result is answered "result: <content>"; any other user text is
// answered "echo: <text>".
func model(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	last := req.Messages[len(req.Messages)-1]
	var text string
	if json.Unmarshal(last.Content, &text) != nil {
		var parts []struct{ Text string }
		json.Unmarshal(last.Content, &parts)
		for _, p := range parts {
			text += p.Text
		}
	}
	msg := map[string]any{"role": "assistant"}
	finish := "stop"
	switch {
	case last.Role == "tool":
		msg["content"] = "result: " + text
	case strings.HasPrefix(text, "call "):
		name, args, _ := strings.Cut(strings.TrimPrefix(text, "call "), " ")
		msg["tool_calls"] = []map[string]any{{"id": "call_1", "type": "function", "function": map[string]any{"name": name, "arguments": args}}}
		finish = "tool_calls"
	default:
		msg["content"] = "echo: " + text
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "c", "object": "chat.completion", "created": 0, "model": "m",
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	})
}

// syncBuffer is a bytes.Buffer safe for a child's stdout and stderr at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ctx returns a context bounded by d, canceled when the test ends.
func ctx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}
