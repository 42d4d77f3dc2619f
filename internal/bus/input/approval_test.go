package input_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/input"
)

func TestParseDecision(t *testing.T) {
	for _, tc := range []struct {
		name, payload, want string // want: an error substring, "" for none
	}{
		{"approve", `{"tool_call_id":"c1","approve":true}`, ""},
		{"reject with reason", `{"tool_call_id":"c1","approve":false,"reason":"no"}`, ""},
		{"edit", `{"tool_call_id":"c1","approve":true,"arguments":{"x":2}}`, ""},
		{"null arguments", `{"tool_call_id":"c1","approve":true,"arguments":null}`, ""},
		{"empty", ``, "decision payload is empty"},
		{"not json", `yes`, "not a valid object"},
		{"no call", `{"approve":true}`, `no "tool_call_id"`},
		{"no approve", `{"tool_call_id":"c1"}`, `no "approve"`},
		{"approve not a bool", `{"tool_call_id":"c1","approve":"yes"}`, "not a valid object"},
		{"unknown field", `{"tool_call_id":"c1","approve":true,"args":{}}`, `unknown field "args"`},
		{"arguments not an object", `{"tool_call_id":"c1","approve":true,"arguments":[1]}`, `"arguments" must be a JSON object`},
		{"edit of a rejection", `{"tool_call_id":"c1","approve":false,"arguments":{"x":1}}`, "a rejection carries none"},
		{"trailing data", `{"tool_call_id":"c1","approve":true} {}`, "data after its JSON object"},
		{"not UTF-8", "{\"tool_call_id\":\"\xff\",\"approve\":true}", "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := input.ParseDecision([]byte(tc.payload), "id-1")
			if tc.want == "" {
				if err != nil || d.ToolCallID != "c1" || d.ID != "id-1" {
					t.Fatalf("ParseDecision = %+v, %v", d, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}
