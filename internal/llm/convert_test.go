package llm

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with the file testdata/name, or rewrites the file
// when -update is given.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestConvertRequest(t *testing.T) {
	const png = "iVBORw0KGgo=" // the PNG signature
	schema := json.RawMessage(`{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}`)
	tests := []struct {
		name string
		req  loop.Request
	}{
		{
			name: "text",
			req: loop.Request{
				SystemPrompt: "You are a helpful assistant.",
				Messages: []agentfleet.Message{
					agentfleet.NewUserMessage("Hello"),
					&agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{agentfleet.Text("Hi! How can I help?")}},
					&agentfleet.UserMessage{Role: "user", Content: []agentfleet.Content{agentfleet.Text("first line"), agentfleet.Text(""), agentfleet.Text("second line")}},
				},
			},
		},
		{
			name: "user_image",
			req: loop.Request{
				Messages: []agentfleet.Message{
					&agentfleet.UserMessage{Role: "user", Content: []agentfleet.Content{
						agentfleet.Text("What is in this picture?"),
						agentfleet.Image(png, "image/png"),
					}},
				},
			},
		},
		{
			name: "tool_round",
			req: loop.Request{
				SystemPrompt: "Use tools.",
				Messages: []agentfleet.Message{
					agentfleet.NewUserMessage("time in Tokyo and 2+2, and a chart"),
					&agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{
						agentfleet.Text("Let me look."),
						{Type: agentfleet.ContentThinking, Text: "hidden reasoning"},
						{Type: agentfleet.ContentToolCall, ID: "call_1", Name: "get_time", Arguments: json.RawMessage(`"{\"timezone\":\"Asia/Tokyo\"}"`)},
						{Type: agentfleet.ContentToolCall, ID: "call_2", Name: "calculator", Arguments: json.RawMessage(`{"expression": "2+2"}`)},
						{Type: agentfleet.ContentToolCall, ID: "call_3", Name: "chart"},
						{Type: agentfleet.ContentToolCall, ID: "call_4", Name: "broken", Arguments: json.RawMessage(`"{\"a\":"`)},
					}},
					&agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "call_1", ToolName: "get_time", Content: []agentfleet.Content{agentfleet.Text("2026-05-01T09:00:00+09:00")}},
					&agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "call_2", ToolName: "calculator", Content: []agentfleet.Content{agentfleet.Text("4")}},
					&agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "call_3", ToolName: "chart", Content: []agentfleet.Content{agentfleet.Text("Here is the chart."), agentfleet.Image(png, "image/png")}},
					&agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "call_4", ToolName: "broken", IsError: true, Content: []agentfleet.Content{agentfleet.Text("arguments are not valid JSON")}},
				},
			},
		},
		{
			name: "tool_calls_block",
			req: loop.Request{
				Messages: []agentfleet.Message{
					agentfleet.NewUserMessage("weather?"),
					// A failed turn: nothing to send, left out.
					&agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{}, StopReason: agentfleet.StopReasonError, ErrorMessage: "boom"},
					&agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{{
						Type: agentfleet.ContentToolCalls,
						ToolCalls: []agentfleet.RawToolCall{
							{ID: "call_a", Type: "function", Function: &agentfleet.RawFunction{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Tokyo"}`)}},
							{ID: "call_b", Name: "get_time", Arguments: json.RawMessage(`"{}"`)},
						},
					}}},
					&agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "call_a", ToolName: "get_weather", Content: []agentfleet.Content{}},
					&agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "call_b", ToolName: "get_time", Content: []agentfleet.Content{agentfleet.Text("noon")}},
				},
			},
		},
		{
			name: "tools",
			req: loop.Request{
				Messages: []agentfleet.Message{agentfleet.NewUserMessage("hi")},
				Tools: []agentfleet.ToolDef{
					{Name: "get_time", Description: "Current time in a time zone.", InputSchema: schema},
					{Name: "list_tools", Description: "Lists the tools."},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, tools, err := convertRequest(&tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(map[string]any{"messages": msgs, "tools": tools}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("convert", tt.name+".golden"), append(got, '\n'))
		})
	}
}

func TestConvertRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		req  loop.Request
		want string
	}{
		{
			name: "bad schema",
			req:  loop.Request{Tools: []agentfleet.ToolDef{{Name: "x", InputSchema: json.RawMessage(`{"type":`)}}},
			want: `llm: tool "x": input_schema is not valid JSON`,
		},
		{
			name: "nil message",
			req:  loop.Request{Messages: []agentfleet.Message{agentfleet.NewUserMessage("a"), nil}},
			want: "llm: message 1 is nil",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := convertRequest(&tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestArgumentsText(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"empty", ``, `{}`},
		{"null", `null`, `{}`},
		{"object", `{"a": 1}`, `{"a": 1}`},
		{"string", `"{\"a\":1}"`, `{"a":1}`},
		{"invalid string kept", `"{\"a\":"`, `{"a":`},
		{"empty string", `""`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := argumentsText(json.RawMessage(tt.raw)); got != tt.want {
				t.Errorf("argumentsText(%s) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}
