package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPStdio drives agentctl mcp with the Go SDK's client on its
// standard input and output: tools/list has the agent's tools with their
// schemas and ask_default; tools/call of calculator runs on an
// orchestrator's pipeline; ask_default runs a turn of the offline model,
// with its events as progress.
func TestMCPStdio(t *testing.T) {
	url := startFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var progress []string
	runEnd := make(chan struct{}, 1)
	sess, done := startMCP(t, ctx, url, &mcp.ClientOptions{
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
	}, "mcp")
	list, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range list.Tools {
		byName[tool.Name] = tool
	}
	if byName["calculator"] == nil || byName["ask_default"] == nil {
		t.Fatalf("tools/list = %v, want calculator and ask_default", list.Tools)
	}
	if schema, _ := json.Marshal(byName["calculator"].InputSchema); !strings.Contains(string(schema), `"expression"`) {
		t.Errorf("calculator schema = %s", schema)
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": "2*(3+4)"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); res.IsError || got != "14" {
		t.Errorf("calculator = %q (error %v), want 14", got, res.IsError)
	}
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); !res.IsError || !strings.Contains(got, "expression") {
		t.Errorf("calculator with a number = %q (error %v), want an error result that names expression", got, res.IsError)
	}
	params := &mcp.CallToolParams{Name: "ask_default", Arguments: map[string]any{"session": "stdio", "message": "what is 2*(3+4)?"}}
	params.SetProgressToken(1)
	res, err = sess.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); res.IsError || !strings.Contains(got, "14") {
		t.Errorf("ask_default = %q (error %v), want the answer 14", got, res.IsError)
	}
	// The client handles notifications apart from the response: the last
	// ones may come after it.
	select {
	case <-runEnd:
	case <-time.After(10 * time.Second):
	}
	mu.Lock()
	joined := strings.Join(progress, "|")
	for _, want := range []string{"tool.start calculator", "run.end stop"} {
		if !strings.Contains(joined, want) {
			t.Errorf("progress = %q, want %s", joined, want)
		}
	}
	mu.Unlock()

	sess.Close()
	if err := <-done; err != nil {
		t.Errorf("agentctl mcp: %v", err)
	}
}

// startMCP runs agentctl with args (ending in mcp [agent]) and connects
// the Go SDK's client to its standard input and output. done yields Run's
// error once the session is closed.
func startMCP(t *testing.T, ctx context.Context, url string, opts *mcp.ClientOptions, args ...string) (sess *mcp.ClientSession, done <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := newProg(t, url, inR, args...)
	p.Stdout = outW
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx); outW.Close() }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	sess, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess, errc
}

func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
