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

// TestRespondDelegates: a run whose request offers ask_helper asks the
// child for the messages Delegates picks, and never for a child's task.
func TestRespondDelegates(t *testing.T) {
	picked := ""
	for i := 0; picked == ""; i++ {
		if id := "m-" + string(rune('a'+i%26)) + string(rune('a'+i/26)); Delegates(id) {
			picked = id
		}
	}
	req := &chatRequest{Messages: []chatMessage{{Role: "user", Content: raw("task " + picked)}}}
	if _, calls := respond(req); slices.ContainsFunc(calls, func(c PlannedCall) bool { return c.Name == ToolAsk }) {
		t.Errorf("asks %s without the tool offered", ToolAsk)
	}
	req.Tools = make([]struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}, 1)
	req.Tools[0].Function.Name = ToolAsk
	_, calls := respond(req)
	want := askCall(picked, len(PlannedCalls(picked)))
	if len(calls) == 0 || calls[len(calls)-1] != want || want.Args != `{"message":"task `+picked+`.c"}` {
		t.Errorf("calls %+v, want the last %+v", calls, want)
	}
	req.Messages[0].Content = raw(ChildTask(picked))
	if _, calls := respond(req); slices.ContainsFunc(calls, func(c PlannedCall) bool { return c.Name == ToolAsk }) {
		t.Errorf("a child's task %s delegates again", ChildTask(picked))
	}
}
