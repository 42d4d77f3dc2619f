package a2aremote_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/a2aremote"
	"github.com/agentfleet/agentfleet/internal/profile"
)

const jsPeers = "../a2aserver/testdata/npm"

// jsServer starts the A2A JavaScript SDK's sample server
// (testdata/npm/server.mjs) with token, and returns its endpoint and
// the lines it prints after "listening".
func jsServer(t *testing.T, token string) (string, <-chan string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed, so the A2A JavaScript SDK is not tested")
	}
	if _, err := os.Stat(filepath.Join(jsPeers, "node_modules", "@a2a-js", "sdk")); err != nil {
		t.Skip("the A2A JavaScript SDK is not installed: run (cd internal/a2aserver/testdata/npm && npm ci --no-audit --no-fund)")
	}
	cmd := exec.Command("node", "server.mjs")
	cmd.Dir = jsPeers
	cmd.Env = append(os.Environ(), "A2A_TOKEN="+token)
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string, 16)
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "listening ") {
		t.Fatalf("the JS server did not start: %q %v", sc.Text(), sc.Err())
	}
	port := strings.TrimPrefix(sc.Text(), "listening ")
	go func() {
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return "http://127.0.0.1:" + port + "/a2a", lines
}

type calls struct {
	mu       sync.Mutex
	progress []map[string]any
}

func (c *calls) run(ctx context.Context, tool *agentfleet.Tool, args map[string]any) (*agentfleet.ToolResult, error) {
	return tool.Handler.Call(ctx, &agentfleet.Call{ID: fmt.Sprint(time.Now().UnixNano()), Name: tool.Name, Arguments: args, Progress: func(p any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.progress = append(c.progress, p.(map[string]any))
	}})
}

// TestJavaScriptServer is the fleet's A2A client against the A2A
// JavaScript SDK's server (its 0.3 compatibility layer): a call answered
// with an artifact; a streamed task whose status updates are the call's
// progress; a failed task, an error; a task that asks for input, answered
// by a second call with its task id; a task that hangs, canceled on the
// remote when the call's time is up; a wrong token, a 401.
func TestJavaScriptServer(t *testing.T) {
	url, lines := jsServer(t, "js-token")
	t.Setenv("JS_AGENT_TOKEN", "js-token")
	tool, err := a2aremote.Tool(profile.RemoteAgent{Name: "js", URL: url, Auth: profile.RemoteAuth{TokenEnv: "JS_AGENT_TOKEN"}}, time.Minute, a2aremote.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if tool.Name != "ask_js" {
		t.Errorf("name = %s", tool.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	text := func(r *agentfleet.ToolResult) string { return agentfleet.JoinText(r.Content) }

	var c calls
	res, err := c.run(ctx, tool, map[string]any{"message": "hello there"})
	if err != nil || text(res) != "hi from js" || res.Details["a2a_state"] != "completed" {
		t.Fatalf("hello = %v, %v", res, err)
	}
	c = calls{}
	res, err = c.run(ctx, tool, map[string]any{"message": "stream"})
	if err != nil || text(res) != "streamed answer" {
		t.Fatalf("stream = %v, %v", res, err)
	}
	var steps []string
	for _, p := range c.progress {
		if s, _ := p["text"].(string); strings.HasPrefix(s, "step ") {
			steps = append(steps, s)
		}
	}
	if got := strings.Join(steps, ","); got != "step 1,step 2,step 3" {
		t.Errorf("progress = %v", c.progress)
	}
	if _, err := c.run(ctx, tool, map[string]any{"message": "fail"}); err == nil || !strings.Contains(err.Error(), "failed: the js agent failed on purpose") {
		t.Errorf("fail = %v", err)
	}
	res, err = c.run(ctx, tool, map[string]any{"message": "input"})
	if err != nil || !strings.Contains(text(res), "asks for input (input-required): which color?") {
		t.Fatalf("input = %v, %v", res, err)
	}
	res, err = c.run(ctx, tool, map[string]any{"message": "blue", "task_id": res.Details["task_id"], "context_id": res.Details["context_id"]})
	if err != nil || text(res) != "color: blue" {
		t.Fatalf("the answer to input = %v, %v", res, err)
	}

	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	_, err = c.run(short, tool, map[string]any{"message": "hang"})
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("hang = %v, want the remote task canceled", err)
	}
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "canceled ") || !strings.Contains(err.Error(), strings.TrimPrefix(l, "canceled ")) {
			t.Errorf("the JS server says %q; the call says %v", l, err)
		}
	case <-ctx.Done():
		t.Fatal("the JS server was not told to cancel the task")
	}

	t.Setenv("BAD_TOKEN", "wrong")
	bad, _ := a2aremote.Tool(profile.RemoteAgent{Name: "js", URL: url, Auth: profile.RemoteAuth{TokenEnv: "BAD_TOKEN"}}, time.Minute, a2aremote.Limits{})
	if _, err := c.run(ctx, bad, map[string]any{"message": "hello"}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token = %v", err)
	}
}

// TestHostileRemote: a remote agent whose stream never ends, or whose
// answer is huge, is cut at the bound with an error that says which, and
// the task canceled.
func TestHostileRemote(t *testing.T) {
	canceled := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body strings.Builder
		bufio.NewReader(r.Body).WriteTo(&body)
		if strings.Contains(body.String(), `"tasks/cancel"`) {
			canceled <- "t1"
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":"x","result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"canceled"}}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		flusher := w.(http.Flusher)
		pad := ""
		if strings.Contains(body.String(), "huge") {
			pad = strings.Repeat("x", 60000)
		}
		for i := 0; r.Context().Err() == nil; i++ {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{\"kind\":\"status-update\",\"taskId\":\"t1\",\"contextId\":\"c1\",\"final\":false,\"status\":{\"state\":\"working\",\"message\":{\"kind\":\"message\",\"messageId\":\"m%d\",\"role\":\"agent\",\"parts\":[{\"kind\":\"text\",\"text\":\"%s\"}]}}}}\n\n", i, pad)
			flusher.Flush()
		}
	}))
	defer srv.Close()
	tool, err := a2aremote.Tool(profile.RemoteAgent{Name: "evil", URL: srv.URL}, time.Minute, a2aremote.Limits{MaxEvents: 50, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var c calls
	for _, tc := range []struct{ msg, want string }{
		{"endless", "more than 50 events"},
		{"huge", "passed 1048576 bytes"},
	} {
		_, err := c.run(ctx, tool, map[string]any{"message": tc.msg})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "task t1 canceled") {
			t.Errorf("%s: err = %v, want %q and the task canceled", tc.msg, err, tc.want)
		}
		select {
		case <-canceled:
		case <-ctx.Done():
			t.Fatalf("%s: the task was not canceled", tc.msg)
		}
	}
}
