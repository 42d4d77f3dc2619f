package llmtest

import (
	"encoding/json"
	"strconv"
	"strings"
)

// DefaultModel is the model that replies name when their Model is empty.
const DefaultModel = "llmtest-model"

// Reply is a model reply to script: text, tool calls, or both. Its Stream
// and Completion methods make the Response that sends it.
type Reply struct {
	// Model is the model the response names. Optional; default
	// DefaultModel.
	Model string
	Text  string
	// ToolCalls are the calls of the reply, in order.
	ToolCalls []ToolCall
	// FinishReason is sent as is. Optional; default "tool_calls" when the
	// reply has calls, "stop" otherwise.
	FinishReason string
	// Usage is the usage sent. Optional; default 10 prompt tokens and one
	// completion token per word and per call.
	Usage *Usage
	// ArgsPiece is the length of the pieces in which a stream sends the
	// arguments of each call. Optional; default 8 bytes, so that most
	// arguments come in several chunks.
	ArgsPiece int
}

// ToolCall is one call of a Reply. Arguments are sent as they are, so they
// may be malformed JSON.
type ToolCall struct {
	// ID is optional; default "call_<n>", n counting the calls of the
	// reply from 1.
	ID        string
	Name      string
	Arguments string
}

// Usage is the token usage of a reply.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// PromptTokensDetails, when set, says how many of the prompt tokens
	// came from the provider's prompt cache.
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails is the breakdown of a reply's prompt tokens.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// TextReply returns a Reply with text only.
func TextReply(text string) Reply { return Reply{Text: text} }

// ToolCallsReply returns a Reply that calls tools, without text.
func ToolCallsReply(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Error returns an error Response with status and, when retryAfter is not
// empty, a Retry-After header with that value.
func Error(status int, retryAfter string) Response {
	r := Response{Status: status}
	if retryAfter != "" {
		r.Header = map[string]string{"Retry-After": retryAfter}
	}
	return r
}

func (r Reply) withDefaults() Reply {
	if r.Model == "" {
		r.Model = DefaultModel
	}
	calls := make([]ToolCall, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(i+1)
		}
		calls[i] = c
	}
	r.ToolCalls = calls
	if r.FinishReason == "" {
		r.FinishReason = "stop"
		if len(calls) > 0 {
			r.FinishReason = "tool_calls"
		}
	}
	if r.Usage == nil {
		out := len(strings.Fields(r.Text)) + len(calls)
		r.Usage = &Usage{PromptTokens: 10, CompletionTokens: out, TotalTokens: 10 + out}
	}
	if r.ArgsPiece <= 0 {
		r.ArgsPiece = 8
	}
	return r
}

// Stream returns the Response that streams r the way OpenAI does: the
// text word by word, then each call (its id and name first, then its
// arguments in pieces), then the finish reason, then the usage.
func (r Reply) Stream() Response {
	r = r.withDefaults()
	var chunks []string
	for i, w := range strings.SplitAfter(r.Text, " ") {
		if w == "" {
			continue
		}
		delta := map[string]any{"content": w}
		if i == 0 {
			delta["role"] = "assistant"
		}
		chunks = append(chunks, chunk(r.Model, delta, nil))
	}
	for i, c := range r.ToolCalls {
		chunks = append(chunks, ToolCallChunk(r.Model, i, c.ID, c.Name, ""))
		for args := c.Arguments; args != ""; {
			n := min(r.ArgsPiece, len(args))
			chunks = append(chunks, ToolCallChunk(r.Model, i, "", "", args[:n]))
			args = args[n:]
		}
	}
	chunks = append(chunks, FinishChunk(r.Model, r.FinishReason))
	chunks = append(chunks, UsageChunk(r.Model, *r.Usage))
	return Response{Chunks: chunks}
}

// Response returns the Response that sends r as the request asks:
// streamed (as Stream does) when it says "stream": true, whole (as
// Completion does) otherwise. Its Pause fields may be set as for any
// Response.
func (r Reply) Response() Response {
	return Response{reply: &r}
}

// Completion returns the Response that sends r whole, not streamed.
func (r Reply) Completion() Response {
	r = r.withDefaults()
	msg := map[string]any{"role": "assistant", "content": nil}
	if r.Text != "" {
		msg["content"] = r.Text
	}
	if len(r.ToolCalls) > 0 {
		var calls []map[string]any
		for _, c := range r.ToolCalls {
			calls = append(calls, map[string]any{
				"id":       c.ID,
				"type":     "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
			})
		}
		msg["tool_calls"] = calls
	}
	return Response{Body: mustJSON(map[string]any{
		"id":      "chatcmpl-llmtest",
		"object":  "chat.completion",
		"created": 1,
		"model":   r.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": r.FinishReason}},
		"usage":   r.Usage,
	})}
}

// TextChunk returns a stream chunk carrying a text delta.
func TextChunk(model, text string) string {
	return chunk(model, map[string]any{"content": text}, nil)
}

// ToolCallChunk returns a stream chunk carrying a piece of the tool call
// of index: its id and name (on its first piece) and some argument text.
// Empty id and name are left out.
func ToolCallChunk(model string, index int, id, name, args string) string {
	call := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		call["id"] = id
		call["type"] = "function"
	}
	if name != "" {
		call["function"].(map[string]any)["name"] = name
	}
	return chunk(model, map[string]any{"tool_calls": []any{call}}, nil)
}

// FinishChunk returns the stream chunk that ends a choice with reason.
func FinishChunk(model, reason string) string {
	return chunk(model, map[string]any{}, &reason)
}

// UsageChunk returns the last chunk of a stream that asked for usage: no
// choices, and the usage.
func UsageChunk(model string, u Usage) string {
	if model == "" {
		model = DefaultModel
	}
	return mustJSON(map[string]any{
		"id":      "chatcmpl-llmtest",
		"object":  "chat.completion.chunk",
		"created": 1,
		"model":   model,
		"choices": []any{},
		"usage":   u,
	})
}

func chunk(model string, delta map[string]any, finish *string) string {
	if model == "" {
		model = DefaultModel
	}
	return mustJSON(map[string]any{
		"id":      "chatcmpl-llmtest",
		"object":  "chat.completion.chunk",
		"created": 1,
		"model":   model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("llmtest: " + err.Error())
	}
	return string(b)
}
