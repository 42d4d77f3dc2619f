package loop_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/google/uuid"
)

func TestExtractToolCalls(t *testing.T) {
	tests := []struct {
		name     string
		content  string // JSON array of content blocks
		want     string // name(args) per call
		wantErr  string // ArgumentsError substring of the first call
		fallback bool   // the first call's id must be a generated UUID
	}{
		{name: "no calls", content: `[{"type":"text","text":"hi"}]`, want: ""},
		{name: "tool_call block", content: `[{"type":"text","text":"let me check"},{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":"Tokyo"}}]`, want: `call_1 get_weather{"city":"Tokyo"}`},
		{name: "openai tool_calls array", content: `[{"type":"tool_calls","tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}},
			{"id":"call_2","type":"function","function":{"name":"get_time","arguments":{"timezone":"Asia/Tokyo"}}}]}]`,
			want: `call_1 get_weather{"city":"Tokyo"} call_2 get_time{"timezone":"Asia/Tokyo"}`},
		{name: "tool_calls with top-level name", content: `[{"type":"tool_calls","tool_calls":[{"id":"c","name":"echo","arguments":{"text":"x"}}]}]`, want: `c echo{"text":"x"}`},
		{name: "missing id", content: `[{"type":"tool_call","name":"echo","arguments":{}}]`, want: `? echo{}`, fallback: true},
		{name: "missing id in array", content: `[{"type":"tool_calls","tool_calls":[{"function":{"name":"echo","arguments":"{}"}}]}]`, want: `? echo{}`, fallback: true},
		{name: "string arguments", content: `[{"type":"tool_call","id":"a","name":"echo","arguments":"{\"text\":\"hi\"}"}]`, want: `a echo{"text":"hi"}`},
		{name: "empty string arguments", content: `[{"type":"tool_call","id":"a","name":"list_tools","arguments":""}]`, want: `a list_tools{}`},
		{name: "no arguments", content: `[{"type":"tool_call","id":"a","name":"list_tools"}]`, want: `a list_tools{}`},
		{name: "invalid JSON", content: `[{"type":"tool_call","id":"a","name":"echo","arguments":"{\"text\": \"unterminated"}]`, want: `a echo{}`, wantErr: "arguments are not valid JSON"},
		{name: "not an object", content: `[{"type":"tool_call","id":"a","name":"echo","arguments":"[1,2]"}]`, want: `a echo{}`, wantErr: "arguments must be a JSON object, not [1,2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &agentfleet.AssistantMessage{}
			if err := json.Unmarshal([]byte(tt.content), &m.Content); err != nil {
				t.Fatal(err)
			}
			calls := loop.ExtractToolCalls(m)
			var got []string
			for _, c := range calls {
				args, _ := json.Marshal(c.Arguments)
				if c.Arguments == nil {
					args = []byte("{}")
				}
				id := c.ID
				if tt.fallback {
					if _, err := uuid.Parse(c.ID); err != nil {
						t.Errorf("fallback id %q is not a UUID", c.ID)
					}
					id = "?"
				}
				got = append(got, id+" "+c.Name+string(args))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("calls = %s, want %s", g, tt.want)
			}
			if tt.wantErr != "" && (len(calls) == 0 || !strings.Contains(calls[0].ArgumentsError, tt.wantErr)) {
				t.Errorf("arguments error = %+v, want %q", calls, tt.wantErr)
			}
			if tt.wantErr == "" {
				for _, c := range calls {
					if c.ArgumentsError != "" {
						t.Errorf("unexpected arguments error %q", c.ArgumentsError)
					}
				}
			}
			// The message is normalised: every call is one tool_call block
			// with the call's id, and the message still encodes as JSON.
			blocks := m.ToolCalls()
			if len(blocks) != len(calls) {
				t.Fatalf("tool_call blocks = %d, calls = %d", len(blocks), len(calls))
			}
			for i, b := range blocks {
				if b.ID != calls[i].ID {
					t.Errorf("block %d id = %q, call id = %q", i, b.ID, calls[i].ID)
				}
			}
			if _, err := json.Marshal(m); err != nil {
				t.Errorf("normalised message does not encode: %v", err)
			}
		})
	}
}
