package window

import (
	"math"
	"sync"

	"github.com/agentfleet/agentfleet"
)

// DefaultBytesPerToken is the estimate's ratio until the server reports the
// prompt tokens of a request: about four bytes of English text or JSON per
// token for the common tokenizers.
const DefaultBytesPerToken = 4.0

// messageOverhead counts the bytes of a message's envelope (role,
// separators) that its content does not show.
const messageOverhead = 16

// Estimator estimates the tokens of a request from its size in bytes, with
// a ratio calibrated by the prompt tokens that the server reported for the
// session's last request. It needs no tokenizer. It is safe for concurrent
// use; its zero value uses DefaultBytesPerToken.
type Estimator struct {
	mu            sync.Mutex
	bytesPerToken float64
}

func (e *Estimator) ratio() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bytesPerToken <= 0 {
		return DefaultBytesPerToken
	}
	return e.bytesPerToken
}

// Tokens returns the estimated tokens of n bytes, rounded up.
func (e *Estimator) Tokens(n int) int {
	if n <= 0 {
		return 0
	}
	return int(math.Ceil(float64(n) / e.ratio()))
}

// Bytes returns how many bytes tokens tokens hold, by the estimate.
func (e *Estimator) Bytes(tokens int) int {
	if tokens <= 0 {
		return 0
	}
	return int(float64(tokens) * e.ratio())
}

// Calibrate takes the prompt tokens the server counted for a request of n
// bytes (as RequestBytes measures it). Reports that make no sense (zero
// tokens, fewer than one byte or more than sixteen per token) are ignored.
func (e *Estimator) Calibrate(n, promptTokens int) {
	if n <= 0 || promptTokens <= 0 {
		return
	}
	r := float64(n) / float64(promptTokens)
	if r < 1 || r > 16 {
		return
	}
	e.mu.Lock()
	e.bytesPerToken = r
	e.mu.Unlock()
}

// Overflowed takes the word of the server that a request of n bytes is
// longer than window tokens: from then on n bytes are estimated above
// window, whatever the estimate said.
func (e *Estimator) Overflowed(n, window int) {
	if n <= 0 || window <= 0 {
		return
	}
	r := float64(n) / float64(window+1)
	e.mu.Lock()
	defer e.mu.Unlock()
	cur := e.bytesPerToken
	if cur <= 0 {
		cur = DefaultBytesPerToken
	}
	if r < cur {
		e.bytesPerToken = max(r, 0.5)
	}
}

// RequestBytes measures a request as the estimate counts it: the system
// prompt, every message and every tool definition.
func RequestBytes(systemPrompt string, msgs []agentfleet.Message, tools []agentfleet.ToolDef) int {
	return FixedBytes(systemPrompt, tools) + MessagesBytes(msgs)
}

// FixedBytes measures what every request of a turn sends besides its
// messages: the system prompt and the tool definitions.
func FixedBytes(systemPrompt string, tools []agentfleet.ToolDef) int {
	n := len(systemPrompt) + messageOverhead
	for i := range tools {
		d := &tools[i]
		n += len(d.Name) + len(d.Description) + len(d.InputSchema) + messageOverhead
	}
	return n
}

// MessagesBytes measures messages as the estimate counts them.
func MessagesBytes(ms []agentfleet.Message) int {
	n := 0
	for _, m := range ms {
		n += MessageBytes(m)
	}
	return n
}

// MessageBytes measures one message as the estimate counts it: its text,
// its tool calls' names and arguments, and an envelope.
func MessageBytes(m agentfleet.Message) int {
	n := messageOverhead
	switch m := m.(type) {
	case *agentfleet.UserMessage:
		n += contentBytes(m.Content)
	case *agentfleet.AssistantMessage:
		n += contentBytes(m.Content)
	case *agentfleet.ToolResultMessage:
		n += len(m.ToolCallID) + len(m.ToolName) + contentBytes(m.Content)
	}
	return n
}

func contentBytes(cs []agentfleet.Content) int {
	n := 0
	for i := range cs {
		c := &cs[i]
		n += len(c.Text) + len(c.ID) + len(c.Name) + len(c.Arguments)
		if c.Type == agentfleet.ContentRef {
			// What the model is told of it (agentfleet.DescribeRef).
			n += len(c.Ref) + len(c.SHA256) + len(c.MIMEType) + refBytes
		}
		// An image costs what its provider says, not its base64 size;
		// a fixed share is closer than the data's length.
		if c.Data != "" {
			n += imageBytes
		}
		for _, tc := range c.ToolCalls {
			n += len(tc.ID)
			if tc.Function != nil {
				n += len(tc.Function.Name) + len(tc.Function.Arguments)
			}
		}
	}
	return n
}

// imageBytes is what an image counts for: about a thousand tokens.
const imageBytes = 4096

// refBytes is the text around a ref block's fields in what the model is
// told of it.
const refBytes = 80
