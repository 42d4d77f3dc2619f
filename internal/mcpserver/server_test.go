package mcpserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fake is a Backend with one agent, "default", and a second, "ops".
type fake struct{}

func (fake) Agents(context.Context) ([]string, error) { return []string{"default", "ops"}, nil }

func (fake) Tools(_ context.Context, agent string) ([]agentfleet.ToolDef, error) {
	if agent != "default" && agent != "ops" {
		return nil, errors.New(`unknown agent "` + agent + `" (agents: default, ops)`)
	}
	return []agentfleet.ToolDef{
		{Name: "pic", Description: "a picture", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: agentfleet.Annotations{ReadOnly: true}},
		{Name: "odd", InputSchema: json.RawMessage(`{"type":"string"}`)},
		{Name: "ask_ops", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}, nil
}

func (fake) CallTool(_ context.Context, agent string, call agentfleet.ToolCall, progress func(any)) (*agentfleet.ToolResult, bool, error) {
	progress(map[string]any{"step": 1})
	return &agentfleet.ToolResult{
		Content: []agentfleet.Content{agentfleet.Text("here"), agentfleet.Image(base64.StdEncoding.EncodeToString([]byte("PNG")), "image/png")},
		Details: map[string]any{"agent": agent},
	}, false, nil
}

func (fake) Ask(_ context.Context, agent, session, text string, onEvent func(*agentfleet.Event)) (*agentfleet.AssistantMessage, error) {
	onEvent(&agentfleet.Event{Type: agentfleet.EventToolStart, ToolName: "pic"})
	if text == "fail" {
		return &agentfleet.AssistantMessage{StopReason: agentfleet.StopReasonError, ErrorMessage: "model down"}, nil
	}
	return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text(agent + " in " + session + ": " + text)}, StopReason: agentfleet.StopReasonStop}, nil
}

func connect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func textOf(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TestServer: the tools of the agent the path names, with their hints;
// a tool whose schema is not an object's, and one that takes an ask
// tool's name, left out; results with images and structured content; an
// ask whose run failed is an error result.
func TestServer(t *testing.T) {
	srv := httptest.NewServer(mcpserver.New(mcpserver.Config{Backend: fake{}, Logger: slog.New(slog.DiscardHandler)}).Handler())
	defer srv.Close()
	sess := connect(t, srv.URL+"/mcp/ops")
	ctx := context.Background()
	list, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Name == "pic" && (tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || *tool.Annotations.DestructiveHint) {
			t.Errorf("pic annotations = %+v", tool.Annotations)
		}
	}
	if got, want := strings.Join(names, ","), "ask_default,ask_ops,pic"; got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "pic", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 2 {
		t.Fatalf("content = %v", res.Content)
	}
	if img, ok := res.Content[1].(*mcp.ImageContent); !ok || string(img.Data) != "PNG" || img.MIMEType != "image/png" {
		t.Errorf("image = %#v", res.Content[1])
	}
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"agent":"ops"}` {
		t.Errorf("structured content = %s", b)
	}
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask_default", Arguments: map[string]any{"session": "s1", "message": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(res); res.IsError || got != "default in s1: hi" {
		t.Errorf("ask_default = %q (error %v)", got, res.IsError)
	}
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask_ops", Arguments: map[string]any{"message": "fail"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(res); !res.IsError || !strings.Contains(got, "stop reason error: model down") {
		t.Errorf("failed ask = %q (error %v)", got, res.IsError)
	}
	res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask_ops", Arguments: map[string]any{"message": "x", "session": "a.b"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(res); !res.IsError || !strings.Contains(got, `Tool ask_ops: session name "a.b" may hold only letters, digits, '-' and '_'`) {
		t.Errorf("ask with session a.b = %q (error %v)", got, res.IsError)
	}
}

func TestTool(t *testing.T) {
	if _, err := mcpserver.Tool(agentfleet.ToolDef{Name: "odd", InputSchema: json.RawMessage(`{"type":"string"}`)}); err == nil || !strings.Contains(err.Error(), `input schema {"type":"string"} is not a JSON object schema`) {
		t.Errorf("error = %v", err)
	}
	tool, err := mcpserver.Tool(agentfleet.ToolDef{Name: "x", Annotations: agentfleet.Annotations{Destructive: true, Idempotent: true}})
	if err != nil {
		t.Fatal(err)
	}
	if a := tool.Annotations; a.ReadOnlyHint || !a.IdempotentHint || !*a.DestructiveHint || a.OpenWorldHint != nil {
		t.Errorf("annotations = %+v", a)
	}
}

func TestAgentOf(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"/mcp", "default"},
		{"/mcp/", "default"},
		{"/mcp/ops", "ops"},
		{"/mcp?agent=ops", "ops"},
		{"/mcp/ops?agent=other", "ops"},
	} {
		if got := mcpserver.AgentOf(httptest.NewRequest("POST", tc.url, nil)); got != tc.want {
			t.Errorf("AgentOf(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

// changing is a Backend whose default agent's tools a test changes.
type changing struct {
	fake
	mu    sync.Mutex
	tools []agentfleet.ToolDef
}

func (c *changing) Tools(context.Context, string) ([]agentfleet.ToolDef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.tools), nil
}

func (c *changing) set(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tools = nil
	for _, n := range names {
		c.tools = append(c.tools, agentfleet.ToolDef{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
}

// TestStdioFollowsTools: over stdio, a tool that appears or vanishes on
// the fleet is announced with tools/list_changed.
func TestStdioFollowsTools(t *testing.T) {
	b := &changing{}
	b.set("one")
	s := mcpserver.New(mcpserver.Config{Backend: b, Logger: slog.New(slog.DiscardHandler), Refresh: 20 * time.Millisecond})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { s.ServeStdio(ctx, "default", inR, outW); outW.Close() }()
	changed := make(chan struct{}, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	sess, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	names := func() string {
		list, err := sess.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, tool := range list.Tools {
			ns = append(ns, tool.Name)
		}
		return strings.Join(ns, ",")
	}
	if got, want := names(), "ask_default,ask_ops,one"; got != want {
		t.Fatalf("tools = %s, want %s", got, want)
	}
	b.set("two")
	for {
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no tools/list_changed")
		}
		if names() == "ask_default,ask_ops,two" {
			return
		}
	}
}
