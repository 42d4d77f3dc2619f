package loop

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/google/uuid"
)

// ExtractToolCalls returns the tool calls of a model response (spec section
// 7). It accepts both forms: tool_call blocks and OpenAI tool_calls arrays.
// A call without an id gets a UUID. Arguments may be a JSON object or a JSON
// string holding one (the OpenAI form); anything else leaves the call with
// an ArgumentsError, which the pipeline answers with an error result.
//
// ExtractToolCalls rewrites m.Content in place so that every call is one
// tool_call block with its id, in the order the model gave them.
func ExtractToolCalls(m *agentfleet.AssistantMessage) []agentfleet.ToolCall {
	var calls []agentfleet.ToolCall
	content := make([]agentfleet.Content, 0, len(m.Content))
	add := func(id, name string, raw json.RawMessage) {
		if id == "" {
			id = uuid.NewString()
		}
		args, norm, err := parseArguments(raw)
		tc := agentfleet.ToolCall{ID: id, Name: name, Arguments: args}
		if err != nil {
			tc.ArgumentsError = err.Error()
		}
		calls = append(calls, tc)
		content = append(content, agentfleet.Content{Type: agentfleet.ContentToolCall, ID: id, Name: name, Arguments: norm})
	}
	for _, c := range m.Content {
		if c.Type != agentfleet.ContentToolCall && c.Type != agentfleet.ContentToolCalls {
			content = append(content, c)
			continue
		}
		for _, b := range agentfleet.ToolCallBlocks([]agentfleet.Content{c}) {
			add(b.ID, b.Name, b.Arguments)
		}
	}
	m.Content = content
	return calls
}

// parseArguments decodes the arguments of one call. It returns the argument
// map, the arguments in the form to keep in the conversation, and an error
// that says what was wrong.
func parseArguments(raw json.RawMessage) (map[string]any, json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return map[string]any{}, json.RawMessage(`{}`), nil
	}
	text := trimmed
	if trimmed[0] == '"' {
		var s string
		if err := json.Unmarshal(trimmed, &s); err != nil {
			return nil, trimmed, fmt.Errorf("arguments are not valid JSON: %v", err)
		}
		text = bytes.TrimSpace([]byte(s))
		if len(text) == 0 {
			return map[string]any{}, json.RawMessage(`{}`), nil
		}
	}
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		return nil, trimmed, fmt.Errorf("arguments are not valid JSON: %v (arguments: %s)", err, clip(text, 200))
	}
	args, ok := v.(map[string]any)
	if !ok {
		return nil, trimmed, fmt.Errorf("arguments must be a JSON object, not %s", clip(text, 200))
	}
	return args, json.RawMessage(text), nil
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
