package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
)

// MaxTextBytes bounds the text of one user message.
const MaxTextBytes = 1 << 20

// UserPayload is the JSON body of in, ask and steer messages. Content is a
// string or an array of content blocks.
type UserPayload struct {
	Content json.RawMessage `json:"content"`
	ID      string          `json:"id,omitempty"`
	// Priority, optional, is the run's priority in the fleet's model
	// quota: interactive or batch.
	Priority string `json:"priority,omitempty"`
}

// ParseUserMessage decodes the payload of an in, ask or steer message. A
// payload that is a JSON object must be {"content": ..., "id": ...}; any
// other payload is taken as plain text. msgID (the Nats-Msg-Id header) is the
// message id when the payload names none. The error says what is wrong.
func ParseUserMessage(data []byte, msgID string) (*agentfleet.UserMessage, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("payload is empty: send text, or {\"content\": ...}")
	}
	if !utf8.Valid(trimmed) {
		return nil, errors.New("payload is not valid UTF-8")
	}
	m := &agentfleet.UserMessage{Role: agentfleet.RoleUser, ID: msgID, Timestamp: time.Now().UTC()}
	if trimmed[0] != '{' {
		if len(trimmed) > MaxTextBytes {
			return nil, fmt.Errorf("text of %d bytes exceeds the limit of %d", len(trimmed), MaxTextBytes)
		}
		m.Content = []agentfleet.Content{agentfleet.Text(string(trimmed))}
		return m, nil
	}
	var p UserPayload
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("payload is not a valid message object {\"content\": ..., \"id\": ...}: %w", err)
	}
	if dec.More() {
		return nil, errors.New("payload has data after its JSON object")
	}
	if p.ID != "" {
		m.ID = p.ID
	}
	switch p.Priority {
	case "", agentfleet.PriorityInteractive, agentfleet.PriorityBatch:
		m.Priority = p.Priority
	default:
		return nil, fmt.Errorf("priority %q is not interactive or batch", truncate(p.Priority, 64))
	}
	c := bytes.TrimSpace(p.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
		return nil, errors.New(`payload has no "content"`)
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
		if s == "" {
			return nil, errors.New("content is an empty string")
		}
		m.Content = []agentfleet.Content{agentfleet.Text(s)}
	case c[0] == '[':
		if err := json.Unmarshal(c, &m.Content); err != nil {
			return nil, fmt.Errorf("content is not an array of content blocks: %w", err)
		}
		if len(m.Content) == 0 {
			return nil, errors.New("content is an empty array")
		}
		for i, b := range m.Content {
			if b.Type == agentfleet.ContentRef {
				return nil, fmt.Errorf("content[%d]: a ref block comes from a tool, not from a user message", i)
			}
			if err := b.Validate(); err != nil {
				return nil, fmt.Errorf("content[%d]: %w", i, err)
			}
		}
	default:
		return nil, errors.New("content must be a string or an array of content blocks")
	}
	return m, nil
}

// ParseAbort decodes the payload of an abort message: empty, {"reason":
// "..."}, or plain text taken as the reason.
func ParseAbort(data []byte) (string, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return "", nil
	}
	if !utf8.Valid(trimmed) {
		return "", errors.New("abort payload is not valid UTF-8")
	}
	if trimmed[0] != '{' {
		return string(trimmed), nil
	}
	var p struct {
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(trimmed, &p); err != nil {
		return "", fmt.Errorf("abort payload is not a valid object {\"reason\": ...}: %w", err)
	}
	return p.Reason, nil
}

// truncate shortens s to at most n bytes, for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
