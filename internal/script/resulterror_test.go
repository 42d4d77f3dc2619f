package script

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet"
)

// TestCallToolErrorResult: a CallTool that fails with a *ResultError hands
// call_tool(full=True) the tool's own error result, details included, and
// a plain error only its text.
func TestCallToolErrorResult(t *testing.T) {
	failed := &agentfleet.ToolResult{Content: []agentfleet.Content{{Type: agentfleet.ContentText, Text: "disk full"}}, Details: map[string]any{"device": "sda"}}
	for _, tc := range []struct {
		name    string
		err     error
		details map[string]any
	}{
		{"error result", &ResultError{Result: failed}, map[string]any{"device": "sda"}},
		{"plain error", errorString("disk full"), map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{CallTool: func(context.Context, *agentfleet.ToolCall) (*agentfleet.ToolResult, error) { return nil, tc.err }}
			relay := mustNew(t, &Definition{Name: "relay", Description: "relay", InputSchema: json.RawMessage(`{"type":"object"}`),
				Code: "def execute(args):\n    r = call_tool('disk', {}, full=True)\n    return {'content': r['text'], 'details': {'is_error': r['is_error'], 'details': r['details']}}\n"}, env)
			res, err := callTool(t, relay, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := agentfleet.JoinText(res.Content), "disk full"; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
			if got, want := res.Details, (map[string]any{"is_error": true, "details": tc.details}); !reflect.DeepEqual(got, want) {
				t.Errorf("details = %v, want %v", got, want)
			}
		})
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
