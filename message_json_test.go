package agentfleet_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

// oddArguments are tool call arguments that Marshal writes as they are, or
// compacts, or escapes, or refuses.
var oddArguments = []json.RawMessage{
	nil, json.RawMessage(`{}`), json.RawMessage(`{"expression":"2+3"}`), json.RawMessage(`{ "a" : [1, 2] }`),
	json.RawMessage("{\n\t\"a\":1\r\n}"), json.RawMessage(`{"html":"<b>&</b>"}`), json.RawMessage(`{"ls":"` + "\u2028" + `"}`),
	json.RawMessage(`{"u":"é世"}`), json.RawMessage(`[1,"x",null,true]`), json.RawMessage(`"s"`), json.RawMessage(`12.5e3`),
	json.RawMessage(`{"a":`), json.RawMessage(`nope`), json.RawMessage(`{"a":1}{"b":2}`),
}

func oddMessages() []agentfleet.Message {
	ts := time.Date(2026, 12, 3, 18, 0, 0, 123456789, time.UTC)
	var ms []agentfleet.Message
	for i, s := range oddStrings {
		args := oddArguments[i%len(oddArguments)]
		content := []agentfleet.Content{
			agentfleet.Text(s),
			{Type: agentfleet.ContentToolCall, ID: "call_" + s, Name: s, Arguments: args},
			{Type: agentfleet.ContentImage, Data: s, MIMEType: s},
			{Type: agentfleet.ContentRef, Ref: "obj://b/" + s, Size: int64(i) * 1000, SHA256: s, MIMEType: "text/csv", Name: s},
			{Type: "text", Ref: s, Size: int64(i)},
		}
		if i%4 == 0 {
			content = append(content, agentfleet.Content{Type: "tool_calls", ToolCalls: []agentfleet.RawToolCall{{ID: s, Type: "function", Function: &agentfleet.RawFunction{Name: s, Arguments: args}}}})
		}
		var usage *agentfleet.Usage
		if i%2 == 1 {
			usage = &agentfleet.Usage{InputTokens: i, OutputTokens: 2 * i, TotalTokens: 3 * i, CachedInputTokens: i % 3, Cost: float64(i) / 7}
		}
		var parent *agentfleet.Parent
		if i%3 == 0 {
			parent = parentOf(s, i)
		}
		var details map[string]any
		if i%2 == 0 {
			details = map[string]any{"s": s, "n": float64(i), "nested": map[string]any{s: []any{s, true, nil}}}
		}
		ms = append(ms,
			&agentfleet.UserMessage{Role: agentfleet.RoleUser, Content: content, ID: s, Timestamp: ts, Parent: parent, Priority: s},
			&agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: content, API: s, Provider: s, Model: s, Usage: usage,
				StopReason: agentfleet.StopReason(s), ErrorMessage: s, RunID: s, Timestamp: ts.Add(time.Duration(i) * time.Hour)},
			&agentfleet.ToolResultMessage{Role: agentfleet.RoleTool, ToolCallID: s, ToolName: s, Content: content, Details: details, Usage: usage,
				AddedToolNames: []string{s, "b"}[:i%3/2+1], IsError: i%2 == 0, Terminate: i%5 == 0, Timestamp: ts},
		)
	}
	ms = append(ms, &agentfleet.UserMessage{}, &agentfleet.AssistantMessage{}, &agentfleet.ToolResultMessage{},
		&agentfleet.ToolResultMessage{Content: []agentfleet.Content{}, AddedToolNames: []string{}}, (*agentfleet.AssistantMessage)(nil))
	return ms
}

// TestAppendMessageJSONMatchesMarshal checks that the hand-made encoder
// writes what json.Marshal writes, or fails when it fails, leaving the
// buffer as it was.
func TestAppendMessageJSONMatchesMarshal(t *testing.T) {
	for _, m := range oddMessages() {
		checkAppendMessageJSON(t, m)
	}
}

func checkAppendMessageJSON(t *testing.T, m agentfleet.Message) {
	t.Helper()
	want, werr := json.Marshal(m)
	prefix := []byte("prefix")
	got, gerr := agentfleet.AppendMessageJSON(bytes.Clone(prefix), m)
	switch {
	case werr != nil:
		if gerr == nil || !bytes.Equal(got, prefix) {
			t.Errorf("Marshal failed (%v), AppendMessageJSON gave %q, %v", werr, got, gerr)
		}
	case gerr != nil:
		t.Errorf("AppendMessageJSON: %v; Marshal gave %s", gerr, want)
	case !bytes.Equal(got[len(prefix):], want):
		t.Errorf("AppendMessageJSON\n got %s\nwant %s", got[len(prefix):], want)
	}
}

func FuzzMessageJSON(f *testing.F) {
	f.Add("hello", `{"a":1}`, "call_1", int64(3), true)
	f.Add("<&>\u2028", "{ \"a\" : 1 }", "", int64(0), false)
	f.Add("\xff", `{"a":`, "x", int64(-5), true)
	f.Fuzz(func(t *testing.T, s, args, id string, n int64, flag bool) {
		ts := time.Unix(0, n).UTC()
		content := []agentfleet.Content{agentfleet.Text(s), {Type: agentfleet.ContentToolCall, ID: id, Name: s, Arguments: json.RawMessage(args)}}
		for _, m := range []agentfleet.Message{
			&agentfleet.UserMessage{Role: s, Content: content, ID: id, Timestamp: ts},
			&agentfleet.AssistantMessage{Role: s, Content: content, RunID: id, Timestamp: ts, Usage: &agentfleet.Usage{TotalTokens: int(n)}},
			&agentfleet.ToolResultMessage{Role: s, ToolCallID: id, Content: content, IsError: flag, Details: map[string]any{s: args}, Timestamp: ts},
		} {
			checkAppendMessageJSON(t, m)
		}
	})
}

// BenchmarkAppendMessageJSON encodes a tool call's assistant message, the
// most frequent record of a run, by hand and with Marshal.
func BenchmarkAppendMessageJSON(b *testing.B) {
	m := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Model: "gpt-4o", RunID: "0b6f3c1e-8c0f-4a7e-9d1b-2f4a5c6d7e8f",
		Content:    []agentfleet.Content{{Type: agentfleet.ContentToolCall, ID: "call_0b6f3c1e", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+3"}`)}},
		Usage:      &agentfleet.Usage{InputTokens: 120, OutputTokens: 12, TotalTokens: 132},
		StopReason: agentfleet.StopReasonToolUse, Timestamp: time.Now().UTC()}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = agentfleet.AppendMessageJSON(buf[:0], m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
