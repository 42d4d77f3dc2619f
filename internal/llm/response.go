package llm

import (
	"crypto/rand"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	openai "github.com/sashabaranov/go-openai"
)

// API is the API field of the messages a Client returns.
const API = "openai-completions"

// reply is a model response as one attempt assembled it, from a stream or
// from a whole completion.
type reply struct {
	model  string
	text   strings.Builder
	calls  map[int]*callParts
	finish openai.FinishReason
	usage  *openai.Usage
}

// callParts is one tool call being assembled.
type callParts struct {
	id, name string
	args     strings.Builder
}

// call returns the call of index i, adding it when new.
func (r *reply) call(i int) *callParts {
	if r.calls == nil {
		r.calls = make(map[int]*callParts)
	}
	c, ok := r.calls[i]
	if !ok {
		c = new(callParts)
		r.calls[i] = c
	}
	return c
}

// message returns the assistant message of r: its text block, if any,
// then one tool_call block per call in the order of their indexes.
func (r *reply) message(provider string) *agentfleet.AssistantMessage {
	m := &agentfleet.AssistantMessage{
		Role:      agentfleet.RoleAssistant,
		Content:   []agentfleet.Content{},
		API:       API,
		Provider:  provider,
		Model:     r.model,
		Timestamp: time.Now().UTC(),
	}
	if r.text.Len() > 0 {
		m.Content = append(m.Content, agentfleet.Text(r.text.String()))
	}
	indexes := make([]int, 0, len(r.calls))
	for i := range r.calls {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		c := r.calls[i]
		id := c.id
		if id == "" {
			// Some servers leave ids out; the loop needs one to pair the
			// result with its call.
			id = "call_" + strings.ToLower(rand.Text()[:16])
		}
		// The argument text is kept as a JSON string, whatever it holds:
		// the loop parses it, and answers invalid JSON with an error
		// result that the model can learn from.
		args, _ := json.Marshal(c.args.String())
		m.Content = append(m.Content, agentfleet.Content{
			Type:      agentfleet.ContentToolCall,
			ID:        id,
			Name:      c.name,
			Arguments: args,
		})
	}
	if r.usage != nil {
		m.Usage = &agentfleet.Usage{
			InputTokens:  r.usage.PromptTokens,
			OutputTokens: r.usage.CompletionTokens,
			TotalTokens:  r.usage.TotalTokens,
		}
		if d := r.usage.PromptTokensDetails; d != nil && d.CachedTokens > 0 && d.CachedTokens <= r.usage.PromptTokens {
			m.Usage.CachedInputTokens = d.CachedTokens
		}
	}
	m.StopReason, m.ErrorMessage = stopReason(r.finish, len(r.calls) > 0)
	return m
}

// stopReason maps an OpenAI finish reason to a stop reason and, for a
// filtered response, an error message.
func stopReason(finish openai.FinishReason, hasCalls bool) (agentfleet.StopReason, string) {
	switch finish {
	case openai.FinishReasonToolCalls, openai.FinishReasonFunctionCall:
		return agentfleet.StopReasonToolUse, ""
	case openai.FinishReasonLength:
		return agentfleet.StopReasonLength, ""
	case openai.FinishReasonContentFilter:
		return agentfleet.StopReasonStop, "content filtered"
	}
	// "stop", and anything a lax server sends: the calls decide.
	if hasCalls {
		return agentfleet.StopReasonToolUse, ""
	}
	return agentfleet.StopReasonStop, ""
}

// replyFromCompletion returns the reply of a whole (non-streamed) response.
func replyFromCompletion(resp *openai.ChatCompletionResponse) *reply {
	r := &reply{model: resp.Model}
	if u := resp.Usage; u.PromptTokens != 0 || u.CompletionTokens != 0 || u.TotalTokens != 0 {
		r.usage = &u
	}
	if len(resp.Choices) == 0 {
		return r
	}
	ch := resp.Choices[0]
	r.finish = ch.FinishReason
	r.text.WriteString(ch.Message.Content)
	if ch.Message.Content == "" && ch.Message.Refusal != "" {
		r.text.WriteString(ch.Message.Refusal)
	}
	for i, tc := range ch.Message.ToolCalls {
		c := r.call(i)
		c.id, c.name = tc.ID, tc.Function.Name
		c.args.WriteString(tc.Function.Arguments)
	}
	if fc := ch.Message.FunctionCall; fc != nil && len(ch.Message.ToolCalls) == 0 {
		c := r.call(0)
		c.name = fc.Name
		c.args.WriteString(fc.Arguments)
	}
	return r
}
