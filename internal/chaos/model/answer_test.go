package model

import (
	"encoding/json"
	"slices"
	"testing"
)

func raw(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

func TestRespond(t *testing.T) {
	calls := PlannedCalls("m-1")
	var asked []wireToolCall
	for _, c := range calls {
		var w wireToolCall
		w.ID, w.Type, w.Function.Name, w.Function.Arguments = c.ID, "function", c.Name, c.Args
		asked = append(asked, w)
	}
	for _, tc := range []struct {
		name      string
		msgs      []chatMessage
		wantText  string
		wantCalls []PlannedCall
	}{
		{"a new task asks for its tools", []chatMessage{{Role: "system", Content: raw("be brief")}, {Role: "user", Content: raw("task m-1")}}, "", calls},
		{"the results come back: the answer joins them in order", []chatMessage{
			{Role: "user", Content: raw("task m-1")},
			{Role: "assistant", ToolCalls: asked},
			{Role: "tool", ToolCallID: calls[0].ID, Content: raw("m-1")},
			{Role: "tool", ToolCallID: calls[1].ID, Content: json.RawMessage(`[{"type":"text","text":"slept"}]`)},
		}, "answer m-1: m-1 | slept", nil},
		{"only the last user message counts", []chatMessage{
			{Role: "user", Content: raw("task m-0")},
			{Role: "assistant", ToolCalls: asked},
			{Role: "tool", ToolCallID: calls[0].ID, Content: raw("old")},
			{Role: "user", Content: raw("task m-1")},
		}, "", calls},
		{"no user message", []chatMessage{{Role: "system", Content: raw("x")}}, "no task", nil},
		{"not a task", []chatMessage{{Role: "user", Content: raw("hello")}}, "not a task: hello", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, got := respond(&chatRequest{Messages: tc.msgs})
			if text != tc.wantText || !slices.Equal(got, tc.wantCalls) {
				t.Errorf("respond = %q, %v; want %q, %v", text, got, tc.wantText, tc.wantCalls)
			}
		})
	}
}

func TestPlannedCalls(t *testing.T) {
	for _, id := range []string{"m-1", "m-2", "m-3", "m-4", "m-5", "m-6"} {
		calls := PlannedCalls(id)
		want := []string{ToolEcho, ToolSleep}
		if UsesLedger(id) {
			want = append(want, ToolLedger)
		}
		var names []string
		for i, c := range calls {
			names = append(names, c.Name)
			if got, want := c.ID, "call_"+id+"_"+string(rune('0'+i)); got != want {
				t.Errorf("%s: call %d id %q, want %q", id, i, got, want)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: calls %v, want %v", id, names, want)
		}
		if ms := SleepMS(id); ms < 10 || ms > 400 {
			t.Errorf("%s: sleep %d ms, want 10 to 400", id, ms)
		}
	}
}
