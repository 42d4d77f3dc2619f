package agentfleet_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

// TestEventJSON checks that every field of an event survives its JSON form,
// so that no two fields share a key (encoding/json drops both silently).
func TestEventJSON(t *testing.T) {
	e := agentfleet.Event{
		Type: agentfleet.EventToolEnd, Agent: "a", Session: "s", RunID: "r", Turn: 2, Seq: 9,
		Time:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		StopReason: agentfleet.StopReasonStop, Delta: "d",
		Message:    &agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{agentfleet.Text("hi")}},
		ToolCallID: "c", ToolName: "t", Arguments: map[string]any{"x": 1.0}, Partial: "p",
		Result:  &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text("out")}},
		IsError: true, DurationMS: 1.5, Worker: "w", Attempt: 2, Outcome: "timeout",
		ErrorMessage: "bad", Subject: "agent.in.a.s", Payload: "x",
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var got agentfleet.Event
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Errorf("round trip lost fields:\n got %+v\nwant %+v\njson %s", got, e, b)
	}
	for _, key := range []string{`"message":"bad"`, `"assistant":{`, `"is_error":true`, `"tool_call_id":"c"`, `"duration_ms":1.5`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s: %s", key, b)
		}
	}
	// is_error is written on tool.end even when false, and only there.
	b, _ = json.Marshal(agentfleet.Event{Type: agentfleet.EventToolEnd})
	if !strings.Contains(string(b), `"is_error":false`) {
		t.Errorf("tool.end without is_error: %s", b)
	}
	b, _ = json.Marshal(agentfleet.Event{Type: agentfleet.EventRunStart})
	if strings.Contains(string(b), "is_error") {
		t.Errorf("run.start with is_error: %s", b)
	}
}

func TestUnmarshalMessage(t *testing.T) {
	for _, m := range []agentfleet.Message{
		agentfleet.NewUserMessage("hi"),
		&agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{agentfleet.Text("a")}, StopReason: "stop"},
		&agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "c", ToolName: "t", Content: []agentfleet.Content{agentfleet.Text("r")}, IsError: true},
	} {
		b, _ := json.Marshal(m)
		got, err := agentfleet.UnmarshalMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.MessageRole() != m.MessageRole() || !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %s: got %+v", m.MessageRole(), got)
		}
	}
	if _, err := agentfleet.UnmarshalMessage([]byte(`{"role":"system"}`)); err == nil || !strings.Contains(err.Error(), `role "system" is not one of user, assistant, tool`) {
		t.Errorf("err = %v", err)
	}
}

func TestContentValidate(t *testing.T) {
	tests := []struct {
		c    agentfleet.Content
		want string
	}{
		{agentfleet.Text("x"), ""},
		{agentfleet.Image("aGk=", "image/png"), ""},
		{agentfleet.Image("aGk=", ""), "mime_type is required"},
		{agentfleet.Image("aGk=", "text/plain"), `mime_type "text/plain" is not an image type`},
		{agentfleet.Image("***", "image/png"), "data is not base64"},
		{agentfleet.Content{}, "content block has no type"},
		{agentfleet.Content{Type: "audio"}, `content block type "audio" is not one of text, image`},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.c, err, tt.want)
		}
	}
}

func FuzzUnmarshalMessage(f *testing.F) {
	for _, s := range []string{`{"role":"user","content":[{"type":"text","text":"hi"}]}`, `{"role":"tool","tool_call_id":"c"}`, `{"role":"assistant","content":null}`, `{`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := agentfleet.UnmarshalMessage(data)
		if err == nil && m == nil {
			t.Error("nil message without an error")
		}
	})
}
