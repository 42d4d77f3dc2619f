package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpFleet runs the orchestrator with in-process workers and a scripted
// model that answers an ask with one calculator call and then 42; /mcp
// takes --mcp-token s3cret and the writer token of --http-token-file.
func mcpFleet(t *testing.T) (*Main, *llmtest.Server) {
	t.Helper()
	llm := llmtest.NewServer(t)
	t.Setenv("OPENAI_BASE_URL", llm.BaseURL())
	t.Setenv("OPENAI_API_KEY", "test-key")
	llm.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_a", Name: "calculator", Arguments: `{"expression":"6*7"}`}).Response(),
		llmtest.TextReply("The answer is 42.").Response(),
	)
	m := run(t, "--workers", "1", "--model", "test-model", "--mcp-token", "s3cret",
		"--http-token-file", tokenFile(t, "writer", testWriterToken), "--http-viewer-token-file", tokenFile(t, "viewer", testViewerToken))
	return m, llm
}

func mcpText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TestMCPServer is the fleet as an MCP server, seen by the Go SDK's
// client: tools/list has the agent's tools with their schemas and the
// ask tool; tools/call of a fleet tool runs it through the pipeline (a bad
// argument is an error result that says what, and the call is counted);
// ask_default runs a whole turn, its events as progress and its final
// message as the result; no token is a 401 and an unknown agent a 404.
func TestMCPServer(t *testing.T) {
	m, _ := mcpFleet(t)
	url := "http://" + m.HTTPAddr() + "/mcp"

	var mu sync.Mutex
	var progress []string
	runEnd := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
			if strings.HasPrefix(req.Params.Message, "run.end") {
				select {
				case runEnd <- struct{}{}:
				default:
				}
			}
		},
	})
	ctx := context.Background()
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearer{"s3cret", http.DefaultTransport}}, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	list, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range list.Tools {
		byName[tool.Name] = tool
	}
	for _, name := range []string{"calculator", "echo", "get_time", "list_tools", "ask_default"} {
		if byName[name] == nil {
			t.Fatalf("tools/list lacks %s: %v", name, list.Tools)
		}
	}
	schema, _ := json.Marshal(byName["calculator"].InputSchema)
	if !strings.Contains(string(schema), `"expression"`) {
		t.Errorf("calculator schema = %s", schema)
	}
	if a := byName["get_time"].Annotations; a == nil || !a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint {
		t.Errorf("get_time annotations = %+v, want read-only and not destructive", a)
	}

	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": "2*(3+4)"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpText(res); res.IsError || got != "14" {
		t.Errorf("calculator = %q (error %v), want 14", got, res.IsError)
	}
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "calculator", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpText(res); !res.IsError || !strings.Contains(got, "expression") {
		t.Errorf("calculator without arguments = %q (error %v), want an error result that names expression", got, res.IsError)
	}

	params := &mcp.CallToolParams{Name: "ask_default", Arguments: map[string]any{"session": "mcp-e2e", "message": "what is 6*7?"}}
	params.SetProgressToken("ask-1")
	res, err = sess.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mcpText(res), "The answer is 42."; res.IsError || got != want {
		t.Errorf("ask_default = %q (error %v), want %q", got, res.IsError, want)
	}
	// The client handles notifications apart from the response: the last
	// ones may come after it.
	select {
	case <-runEnd:
	case <-time.After(10 * time.Second):
	}
	mu.Lock()
	joined := strings.Join(progress, "|")
	mu.Unlock()
	// Every event of the run, up to its end, comes before the result.
	for _, want := range []string{"run.start", "tool.start calculator", "tool.end calculator ok", "turn.end 2", "run.end stop"} {
		if !strings.Contains(joined, want) {
			t.Errorf("progress %q lacks %q", joined, want)
		}
	}

	_, body := scrape(t, "http://"+m.HTTPAddr()+"/metrics")
	if !strings.Contains(body, `agentfleet_tool_call_duration_seconds_count{outcome="invalid",tool="calculator"} 1`) {
		t.Errorf("/metrics does not count the MCP client's invalid calculator call")
	}

	for _, tc := range []struct {
		name, url, token string
		status           int
		body             string
	}{
		{"no token", url, "", http.StatusUnauthorized, "Authorization: Bearer"},
		{"wrong token", url, "nope", http.StatusUnauthorized, "Authorization: Bearer"},
		{"viewer token", url, testViewerToken, http.StatusForbidden, "needs the writer role"},
		{"writer token", url, testWriterToken, http.StatusOK, `"name":"calculator"`},
		{"unknown agent", url + "/nosuch", "s3cret", http.StatusNotFound, `unknown agent "nosuch" (agents: default)`},
		{"unknown agent by query", url + "?agent=nosuch", "s3cret", http.StatusNotFound, `unknown agent "nosuch"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", tc.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b := new(strings.Builder)
			_, _ = io.Copy(b, resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(b.String(), tc.body) {
				t.Errorf("status %d body %q, want %d with %q", resp.StatusCode, b.String(), tc.status, tc.body)
			}
		})
	}
}

// TestMCPInspectorCLI lists and calls the fleet's tools with the MCP
// inspector's command-line client, an MCP client nobody here wrote, with
// --mcp-token and with the writer token of --http-token-file.
func TestMCPInspectorCLI(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed, so the MCP inspector CLI is not tested")
	}
	cli, _ := filepath.Abs("../../internal/mcpbridge/testdata/npm/node_modules/.bin/mcp-inspector-cli")
	if _, err := os.Stat(cli); err != nil {
		t.Skip("the MCP inspector CLI is not installed: run (cd internal/mcpbridge/testdata/npm && npm ci --no-audit --no-fund)")
	}
	m, _ := mcpFleet(t)
	url := "http://" + m.HTTPAddr() + "/mcp"
	token := "s3cret"
	inspect := func(args ...string) map[string]any {
		t.Helper()
		args = append([]string{"--cli", url, "--transport", "http", "--header", "Authorization: Bearer " + token}, args...)
		cmd := exec.Command(cli, args...)
		// inspector-cli 1.0.3 checks for its package.json relative to the
		// working directory but imports it relative to its module: run it
		// where both agree.
		cmd.Dir = filepath.Join(filepath.Dir(cli), "..", "@modelcontextprotocol", "inspector-cli", "build")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("mcp-inspector-cli %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("mcp-inspector-cli output is not JSON: %v\n%s", err, out)
		}
		return v
	}
	list := inspect("--method", "tools/list")
	b, _ := json.Marshal(list)
	for _, want := range []string{`"name":"calculator"`, `"expression"`, `"name":"ask_default"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("tools/list = %s, lacks %s", b, want)
		}
	}
	call := inspect("--method", "tools/call", "--tool-name", "calculator", "--tool-arg", "expression=6*7")
	if b, _ := json.Marshal(call["content"]); !strings.Contains(string(b), `"text":"42"`) {
		t.Errorf("tools/call calculator = %v", call)
	}
	ask := inspect("--method", "tools/call", "--tool-name", "ask_default", "--tool-arg", "message=what is 6*7?", "session=inspector")
	if b, _ := json.Marshal(ask["content"]); !strings.Contains(string(b), "The answer is 42.") {
		t.Errorf("tools/call ask_default = %v", ask)
	}
	// The writer token of --http-token-file opens /mcp too.
	token = testWriterToken
	call = inspect("--method", "tools/call", "--tool-name", "calculator", "--tool-arg", "expression=6*7")
	if b, _ := json.Marshal(call["content"]); !strings.Contains(string(b), `"text":"42"`) {
		t.Errorf("tools/call calculator with the writer token = %v", call)
	}
}

// TestMCPProgressAndCancel: a fleet tool's partial results reach the MCP
// client as progress notifications, and an MCP client that cancels its
// call cancels the call on the worker.
func TestMCPProgressAndCancel(t *testing.T) {
	m, _ := mcpFleet(t)
	started := make(chan struct{}, 1)
	canceled := make(chan struct{}, 1)
	ticks := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "ticks", Description: "reports two ticks; with block, then waits to be canceled",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"block":{"type":"boolean"}}}`)},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			call.Progress(map[string]any{"tick": 1})
			call.Progress(map[string]any{"tick": 2})
			if block, _ := call.Arguments["block"].(bool); block {
				started <- struct{}{}
				<-ctx.Done()
				canceled <- struct{}{}
				return nil, ctx.Err()
			}
			return agentfleet.TextResult("ticked"), nil
		}),
	}
	w, err := worker.Start(connect(t, m), worker.Config{Name: "ticker", Tools: []string{"echo"}, Extra: []*agentfleet.Tool{ticks}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	ctx := context.Background()
	if err := m.Orchestrator().WaitTool(ctx, "ticks", true); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var progress []string
	second := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			if len(progress) == 2 {
				second <- struct{}{}
			}
			mu.Unlock()
		},
	})
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: "http://" + m.HTTPAddr() + "/mcp", HTTPClient: &http.Client{Transport: bearer{"s3cret", http.DefaultTransport}}, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	params := &mcp.CallToolParams{Name: "ticks", Arguments: map[string]any{}}
	params.SetProgressToken("t1")
	res, err := sess.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpText(res); got != "ticked" {
		t.Errorf("ticks = %q", got)
	}
	// The client handles notifications apart from the response.
	select {
	case <-second:
	case <-time.After(10 * time.Second):
	}
	mu.Lock()
	if got, want := strings.Join(progress, "|"), `{"tick":1}|{"tick":2}`; got != want {
		t.Errorf("progress = %q, want %q", got, want)
	}
	mu.Unlock()

	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := sess.CallTool(cctx, &mcp.CallToolParams{Name: "ticks", Arguments: map[string]any{"block": true}})
		errc <- err
	}()
	<-started
	cancel()
	select {
	case <-canceled:
	case <-time.After(15 * time.Second):
		t.Fatal("the worker's call was not canceled when the MCP client canceled")
	}
	if err := <-errc; err == nil {
		t.Error("the canceled call returned no error")
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
