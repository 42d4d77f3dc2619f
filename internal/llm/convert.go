package llm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	openai "github.com/sashabaranov/go-openai"
)

// emptySchema is the parameters schema of a tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// convertRequest converts req to the messages and tools of an OpenAI chat
// completion request (spec formatMsgForLLM):
//
//   - the system prompt becomes a system message;
//   - a user message becomes plain string content when it is text only, and
//     parts (text and image_url with a data URL) when it holds images;
//   - an assistant message keeps its text and its tool calls; thinking
//     blocks are dropped, and a message with neither text nor tool calls
//     (a failed turn) is left out, since the API refuses it;
//   - a tool result becomes a "tool" message with its call's id and its text;
//     an image in it is described in words, as tool messages carry text.
//
// It fails only on a tool whose input schema is not valid JSON.
func convertRequest(req *loop.Request) ([]openai.ChatCompletionMessage, []openai.Tool, error) {
	var msgs []openai.ChatCompletionMessage
	if req.SystemPrompt != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.SystemPrompt})
	}
	for i, m := range req.Messages {
		switch m := m.(type) {
		case *agentfleet.UserMessage:
			msgs = append(msgs, convertUser(m))
		case *agentfleet.AssistantMessage:
			if cm, ok := convertAssistant(m); ok {
				msgs = append(msgs, cm)
			}
		case *agentfleet.ToolResultMessage:
			msgs = append(msgs, convertToolResult(m))
		case nil:
			return nil, nil, fmt.Errorf("llm: message %d is nil", i)
		default:
			return nil, nil, fmt.Errorf("llm: message %d: unknown message type %T", i, m)
		}
	}
	tools, err := convertTools(req.Tools)
	if err != nil {
		return nil, nil, err
	}
	return msgs, tools, nil
}

func convertUser(m *agentfleet.UserMessage) openai.ChatCompletionMessage {
	hasImage := false
	for _, c := range m.Content {
		if c.Type == agentfleet.ContentImage {
			hasImage = true
			break
		}
	}
	if !hasImage {
		return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: agentfleet.JoinText(m.Content)}
	}
	parts := make([]openai.ChatMessagePart, 0, len(m.Content))
	for _, c := range m.Content {
		switch c.Type {
		case agentfleet.ContentText:
			if c.Text != "" {
				parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: c.Text})
			}
		case agentfleet.ContentImage:
			parts = append(parts, openai.ChatMessagePart{
				Type:     openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: "data:" + c.MIMEType + ";base64," + c.Data},
			})
		}
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, MultiContent: parts}
}

// convertAssistant returns the OpenAI form of m, and false when m has
// nothing to send.
func convertAssistant(m *agentfleet.AssistantMessage) (openai.ChatCompletionMessage, bool) {
	cm := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: agentfleet.JoinText(m.Content)}
	add := func(id, name string, args json.RawMessage) {
		cm.ToolCalls = append(cm.ToolCalls, openai.ToolCall{
			ID:       id,
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: name, Arguments: argumentsText(args)},
		})
	}
	for _, b := range agentfleet.ToolCallBlocks(m.Content) {
		add(b.ID, b.Name, b.Arguments)
	}
	return cm, cm.Content != "" || len(cm.ToolCalls) > 0
}

// argumentsText returns the argument text of a tool call block: the
// contents of a JSON string, the text of anything else, "{}" for nothing.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "{}"
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			if strings.TrimSpace(s) == "" {
				return "{}"
			}
			return s
		}
	}
	return string(raw)
}

func convertToolResult(m *agentfleet.ToolResultMessage) openai.ChatCompletionMessage {
	var b strings.Builder
	for _, c := range m.Content {
		var s string
		switch c.Type {
		case agentfleet.ContentText:
			s = c.Text
		case agentfleet.ContentImage:
			s = fmt.Sprintf("[The tool returned an image (%s, %d bytes), which cannot be shown here.]",
				c.MIMEType, base64.RawStdEncoding.DecodedLen(len(strings.TrimRight(c.Data, "="))))
		case agentfleet.ContentRef:
			s = agentfleet.DescribeRef(c)
		}
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	text := b.String()
	if text == "" {
		// The API refuses a tool message without content.
		text = "(no output)"
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: m.ToolCallID, Content: text}
}

func convertTools(defs []agentfleet.ToolDef) ([]openai.Tool, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	tools := make([]openai.Tool, 0, len(defs))
	for _, d := range defs {
		params := json.RawMessage(bytes.TrimSpace(d.InputSchema))
		switch {
		case len(params) == 0 || bytes.Equal(params, []byte("null")):
			params = emptySchema
		case !json.Valid(params):
			return nil, fmt.Errorf("llm: tool %q: input_schema is not valid JSON", d.Name)
		}
		tools = append(tools, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        d.Name,
				Description: d.Description,
				Parameters:  params,
			},
		})
	}
	return tools, nil
}
