package agentfleet

import (
	"encoding/json"
	"slices"
)

// AppendMessageJSON appends the JSON form of m to b and returns the
// extended buffer: the bytes json.Marshal writes for m, key order and
// escaping included, built by hand for the three message types (a
// session's history stores one record per message, and Marshal's
// reflection was most of a record's cost). Values of arbitrary types
// (details, raw tool calls) go through encoding/json. On error it returns b
// as it was given.
func AppendMessageJSON(b []byte, m Message) ([]byte, error) {
	n0 := len(b)
	var err error
	switch m := m.(type) {
	case *UserMessage:
		if m == nil {
			return append(b, "null"...), nil
		}
		b = slices.Grow(b, 128+contentsSizeHint(m.Content))
		b, err = appendUserMessage(b, m)
	case *AssistantMessage:
		if m == nil {
			return append(b, "null"...), nil
		}
		b = slices.Grow(b, 192+contentsSizeHint(m.Content))
		b, err = appendAssistantMessage(b, m)
	case *ToolResultMessage:
		if m == nil {
			return append(b, "null"...), nil
		}
		b = slices.Grow(b, 160+contentsSizeHint(m.Content))
		b, err = appendToolResultMessage(b, m)
	default:
		b, err = appendMarshal(b, m)
	}
	if err != nil {
		return b[:n0], err
	}
	return b, nil
}

func appendUserMessage(b []byte, m *UserMessage) ([]byte, error) {
	var err error
	b = append(b, `{"role":`...)
	b = appendJSONString(b, m.Role)
	b = append(b, `,"content":`...)
	if b, err = appendContents(b, m.Content); err != nil {
		return b, err
	}
	b = appendStringField(b, `,"id":`, m.ID)
	b = append(b, `,"timestamp":`...)
	if b, err = appendJSONTime(b, m.Timestamp); err != nil {
		return b, err
	}
	if m.Parent != nil {
		b = appendParent(append(b, `,"parent":`...), m.Parent)
	}
	b = appendStringField(b, `,"priority":`, m.Priority)
	return append(b, '}'), nil
}

func appendToolResultMessage(b []byte, m *ToolResultMessage) ([]byte, error) {
	var err error
	b = append(b, `{"role":`...)
	b = appendJSONString(b, m.Role)
	b = append(b, `,"tool_call_id":`...)
	b = appendJSONString(b, m.ToolCallID)
	b = append(b, `,"tool_name":`...)
	b = appendJSONString(b, m.ToolName)
	b = append(b, `,"content":`...)
	if b, err = appendContents(b, m.Content); err != nil {
		return b, err
	}
	if len(m.Details) > 0 {
		if b, err = appendJSONObject(append(b, `,"details":`...), m.Details); err != nil {
			return b, err
		}
	}
	if m.Usage != nil {
		if b, err = appendUsage(append(b, `,"usage":`...), m.Usage); err != nil {
			return b, err
		}
	}
	if len(m.AddedToolNames) > 0 {
		b = append(b, `,"added_tool_names":[`...)
		for i, n := range m.AddedToolNames {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, n)
		}
		b = append(b, ']')
	}
	b = append(b, `,"is_error":`...)
	if m.IsError {
		b = append(b, "true"...)
	} else {
		b = append(b, "false"...)
	}
	if m.Terminate {
		b = append(b, `,"terminate":true`...)
	}
	b = append(b, `,"timestamp":`...)
	if b, err = appendJSONTime(b, m.Timestamp); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// appendRawJSON appends raw as Marshal writes a json.RawMessage, when that
// is raw itself: valid JSON with no whitespace to compact and nothing to
// escape for HTML. ok is false otherwise, and b is returned as given.
func appendRawJSON(b []byte, raw json.RawMessage) (_ []byte, ok bool) {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2: // 0xE2 leads U+2028 and U+2029
			return b, false
		}
	}
	if !json.Valid(raw) {
		return b, false
	}
	return append(b, raw...), true
}
