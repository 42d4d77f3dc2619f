package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
)

// a2aFleet runs the orchestrator on the offline model with the writer
// token of --http-token-file, and an agent ops whose echo calls wait for
// approval.
func a2aFleet(t *testing.T) *Main {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	config := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(config, []byte("agents:\n  - name: default\n  - name: ops\n    approve: [echo]\n"), 0o644)
	return run(t, "--workers", "1", "--config", config, "--http-token-file", tokenFile(t, "writer", testWriterToken))
}

func a2aClient(t *testing.T, url string) *a2aclient.Client {
	t.Helper()
	c, err := a2aclient.NewFromEndpoints(context.Background(), []a2a.AgentInterface{{URL: url, Transport: a2a.TransportProtocolJSONRPC}},
		a2aclient.WithJSONRPCTransport(&http.Client{Transport: bearer{testWriterToken, http.DefaultTransport}}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func textOfParts(parts []a2a.Part) string {
	var out []string
	for _, p := range parts {
		if tp, ok := p.(a2a.TextPart); ok {
			out = append(out, tp.Text)
		}
	}
	return strings.Join(out, "\n")
}

// TestA2AServer is the fleet as an A2A server, seen by the Go SDK's
// client: the default agent's card, public, advertises the bearer scheme
// and streaming; message/send answers with a completed task whose
// artifact is the final message; tasks/get reads it back; an echo of ops
// waits for approval as input-required, and the next message, "approve",
// completes it; without the token the endpoint is a 401.
func TestA2AServer(t *testing.T) {
	m := a2aFleet(t)
	base := "http://" + m.HTTPAddr()
	resp, err := http.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card a2a.AgentCard
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if card.Name != "default" || card.URL != base+"/a2a/default" || !card.Capabilities.Streaming || len(card.Security) != 1 {
		t.Errorf("card = %+v", card)
	}
	if _, ok := card.SecuritySchemes["bearer"].(a2a.HTTPAuthSecurityScheme); !ok {
		t.Errorf("security schemes = %#v", card.SecuritySchemes)
	}
	resp, err = http.Post(base+"/a2a/default", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", resp.StatusCode)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := a2aClient(t, base+"/a2a/default")
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "what is 6*7?"})})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("message/send answered %T, want a task", res)
	}
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || !strings.Contains(textOfParts(task.Artifacts[0].Parts), "42") {
		t.Fatalf("task = %+v", task)
	}
	got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateCompleted || got.ContextID != task.ContextID || len(got.History) < 2 {
		t.Errorf("tasks/get = %+v", got)
	}

	ops := a2aClient(t, base+"/a2a/ops")
	res, err = ops.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "echo hello"})})
	if err != nil {
		t.Fatal(err)
	}
	task = res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateInputRequired || !strings.Contains(textOfParts(task.Status.Message.Parts), "tool call echo") {
		t.Fatalf("task = %+v", task)
	}
	answer := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.TextPart{Text: "approve"})
	res, err = ops.SendMessage(ctx, &a2a.MessageSendParams{Message: answer})
	if err != nil {
		t.Fatal(err)
	}
	task = res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted || !strings.Contains(textOfParts(task.Artifacts[0].Parts), "hello") {
		t.Fatalf("after approve: task = %+v", task)
	}
}

// TestA2AHostile: what a hostile A2A client may send gets a JSON-RPC error
// that says what was wrong, and nothing runs: broken JSON, a body over the
// bound, a v1.0 method name, an unknown method, a task id not of this
// server, a well-formed id of a task that is not there (of another
// session), a message for a task of another context, a context that is no
// session name, a file by URI; an unknown agent is a 404.
func TestA2AHostile(t *testing.T) {
	m := a2aFleet(t)
	url := "http://" + m.HTTPAddr() + "/a2a/default"
	post := func(body string) (int, string) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testWriterToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	msg := func(extra string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]` + extra + `}}}`
	}
	for _, c := range []struct{ name, body, want string }{
		{"broken JSON", `{"jsonrpc":"2.0",`, `"code":-32700`},
		{"over the bound", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`, `at most 1048576 bytes`},
		{"v1.0 name", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, `use message/send`},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"tasks/explode","params":{}}`, `"code":-32601`},
		{"foreign task id", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"../../etc"}}`, `task id \"../../etc\": session name is empty`},
		{"task not there", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"other.a2a-0123456789abcdef0123456789abcdef"}}`, `no task other.a2a-0123456789abcdef0123456789abcdef`},
		{"cancel not there", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"other.a2a-0123456789abcdef0123456789abcdef"}}`, `"code":-32001`},
		{"task of another context", msg(`,"taskId":"s1.a2a-0123456789abcdef0123456789abcdef","contextId":"s2"`), `belongs to context s1, not s2`},
		{"context no session", msg(`,"contextId":"a.b"`), `contextId: session name`},
		{"file by URI", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m2","parts":[{"kind":"file","file":{"uri":"http://169.254.169.254/"}}]}}}`, `a file by URI is not fetched`},
		{"agent role", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"agent","messageId":"m3","parts":[{"kind":"text","text":"x"}]}}}`, `a client sends role user`},
		{"push config", `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"x","pushNotificationConfig":{"url":"http://127.0.0.1/"}}}`, `no push notifications`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, body := post(c.body)
			if !strings.Contains(body, c.want) || !strings.Contains(body, `"error"`) {
				t.Errorf("answer = %.300s, want an error with %s", body, c.want)
			}
		})
	}
	req, _ := http.NewRequest("GET", "http://"+m.HTTPAddr()+"/a2a/nobody/.well-known/agent-card.json", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "agents: default, ops") {
		t.Errorf("unknown agent: %d %s", resp.StatusCode, b)
	}
}
