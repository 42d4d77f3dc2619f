// Package agentfleet holds the domain types that every other package of the
// orchestrator and the tool workers shares: content blocks, messages, tool
// definitions, tool calls, tool results and lifecycle events.
//
// It imports only the standard library, so that the loop, the pipeline, the
// bus and the model adapter can all speak of the same things without
// depending on each other.
package agentfleet

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Content block types. Text and image are the MCP/OpenAI content blocks;
// tool_call and tool_calls are the two forms in which a model response carries
// tool calls (spec section 7).
const (
	ContentText      = "text"
	ContentImage     = "image"
	ContentToolCall  = "tool_call"
	ContentToolCalls = "tool_calls"
	ContentThinking  = "thinking"
	// ContentRef is a block that stands for bytes kept in an object store
	// (ref.go).
	ContentRef = "ref"
)

// Content is one block of a message. Its JSON form is the MCP/OpenAI shape:
// {"type":"text","text":...} or {"type":"image","data":...,"mime_type":...}.
//
// Assistant messages may also hold tool call blocks: {"type":"tool_call",
// "id","name","arguments"} (one call) or {"type":"tool_calls","tool_calls":[...]}
// (the OpenAI array). The loop normalises both into tool_call blocks.
type Content struct {
	Type string `json:"type" msgpack:"type"`
	Text string `json:"text,omitempty" msgpack:"text,omitempty"`

	// Data is the base64 encoding of an image; MIMEType says what it is.
	Data     string `json:"data,omitempty" msgpack:"data,omitempty"`
	MIMEType string `json:"mime_type,omitempty" msgpack:"mime_type,omitempty"`

	// ID, Name and Arguments describe a tool_call block.
	ID        string          `json:"id,omitempty" msgpack:"id,omitempty"`
	Name      string          `json:"name,omitempty" msgpack:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty" msgpack:"arguments,omitempty"`

	// ToolCalls holds the entries of a tool_calls block.
	ToolCalls []RawToolCall `json:"tool_calls,omitempty" msgpack:"tool_calls,omitempty"`

	// Ref, Size and SHA256 describe a ref block (ref.go): where the bytes
	// are, how many, and their SHA-256 in lowercase hex. MIMEType says what
	// they are and Name, optionally, what they are called.
	Ref    string `json:"$ref,omitempty" msgpack:"$ref,omitempty"`
	Size   int64  `json:"size,omitempty" msgpack:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty" msgpack:"sha256,omitempty"`
}

// RawToolCall is one entry of an OpenAI tool_calls array, as a model sends it:
// {"id":"call_1","type":"function","function":{"name":...,"arguments":...}}.
// Name and Arguments at the top level are accepted too.
type RawToolCall struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type,omitempty"`
	Function  *RawFunction    `json:"function,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// RawFunction is the function part of a RawToolCall.
type RawFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Text returns a text content block.
func Text(s string) Content { return Content{Type: ContentText, Text: s} }

// Image returns an image content block; data is base64.
func Image(data, mimeType string) Content {
	return Content{Type: ContentImage, Data: data, MIMEType: mimeType}
}

// Validate reports whether c is a well-formed text, image or ref block,
// the only kinds that tools may send (users send text and images). The error names the field at fault.
func (c Content) Validate() error {
	switch c.Type {
	case ContentText:
		return nil
	case ContentImage:
		if c.MIMEType == "" {
			return fmt.Errorf("image block: mime_type is required")
		}
		if !strings.HasPrefix(c.MIMEType, "image/") {
			return fmt.Errorf("image block: mime_type %q is not an image type", c.MIMEType)
		}
		if c.Data == "" {
			return fmt.Errorf("image block: data is empty")
		}
		if _, err := base64.StdEncoding.DecodeString(c.Data); err != nil {
			return fmt.Errorf("image block: data is not base64: %v", err)
		}
		return nil
	case ContentRef:
		return c.validateRef()
	case "":
		return fmt.Errorf("content block has no type")
	default:
		return fmt.Errorf("content block type %q is not one of text, image, ref", c.Type)
	}
}

// JoinText returns the text of all text blocks, separated by newlines.
func JoinText(blocks []Content) string {
	var b strings.Builder
	for _, c := range blocks {
		if c.Type != ContentText || c.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

// ToolCallBlocks returns the tool calls held in content as tool_call blocks,
// in order, whichever of the two forms of spec section 7 the model used: a
// tool_call block is kept as it is, a tool_calls array gives one block per
// entry (the entry's function name and arguments, or its top-level ones).
// Ids are kept as given, empty ones included.
func ToolCallBlocks(content []Content) []Content {
	var out []Content
	for _, c := range content {
		switch c.Type {
		case ContentToolCall:
			out = append(out, c)
		case ContentToolCalls:
			for _, rc := range c.ToolCalls {
				name, args := rc.Name, rc.Arguments
				if rc.Function != nil {
					name, args = rc.Function.Name, rc.Function.Arguments
				}
				out = append(out, Content{Type: ContentToolCall, ID: rc.ID, Name: name, Arguments: args})
			}
		}
	}
	return out
}
