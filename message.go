package agentfleet

import (
	"encoding/json"
	"fmt"
	"time"
)

// Roles of the messages in a conversation.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// StopReason says why a run (or one model call) ended.
type StopReason string

// The stop reasons of a run. A model call ends with StopReasonStop,
// StopReasonToolUse or StopReasonLength; the others are decided by the loop.
const (
	StopReasonStop           StopReason = "stop"
	StopReasonToolUse        StopReason = "tool_use"
	StopReasonToolTerminated StopReason = "tool_use_terminated"
	StopReasonAborted        StopReason = "aborted"
	StopReasonMaxTurns       StopReason = "max_turns"
	StopReasonError          StopReason = "error"
	StopReasonLength         StopReason = "length"
	// StopReasonBudget ends a run that spent a budget of its profile:
	// tokens per run or per session, or tool calls per run.
	StopReasonBudget StopReason = "budget"
)

// Message is one entry of a conversation: a *UserMessage, an
// *AssistantMessage or a *ToolResultMessage.
type Message interface {
	// MessageRole returns RoleUser, RoleAssistant or RoleTool.
	MessageRole() string
}

// UserMessage is what a user sent.
type UserMessage struct {
	Role    string    `json:"role"`
	Content []Content `json:"content"`
	// ID is the client's message id, when it gave one; it de-duplicates.
	ID        string    `json:"id,omitempty"`
	Timestamp time.Time `json:"timestamp"`
	// Parent is set on the message of a run that answers another agent's
	// tool call (see Parent); nil for a client's message.
	Parent *Parent `json:"parent,omitempty"`
	// Priority, when set, is the priority of the run the message starts
	// for the fleet's model quota (PriorityInteractive, PriorityBatch), in
	// place of the agent profile's.
	Priority string `json:"priority,omitempty"`
}

// The priorities of runs for the fleet's model quota: waiting model calls
// of interactive runs are granted before those of batch runs.
const (
	PriorityInteractive = "interactive"
	PriorityBatch       = "batch"
)

// NewUserMessage returns a user message holding one text block.
func NewUserMessage(text string) *UserMessage {
	return &UserMessage{Role: RoleUser, Content: []Content{Text(text)}, Timestamp: time.Now().UTC()}
}

// MessageRole implements Message.
func (*UserMessage) MessageRole() string { return RoleUser }

// AssistantMessage is a model response, or the final message of a run.
type AssistantMessage struct {
	Role         string     `json:"role"`
	Content      []Content  `json:"content"`
	API          string     `json:"api,omitempty"`
	Provider     string     `json:"provider,omitempty"`
	Model        string     `json:"model,omitempty"`
	Usage        *Usage     `json:"usage,omitempty"`
	StopReason   StopReason `json:"stop_reason,omitempty"`
	ErrorMessage string     `json:"error_message,omitempty"`
	// RunID names the run that produced the message.
	RunID     string    `json:"run_id,omitempty"`
	Timestamp time.Time `json:"timestamp"`
}

// MessageRole implements Message.
func (*AssistantMessage) MessageRole() string { return RoleAssistant }

// ToolCalls returns the tool_call blocks of m. It does not look at tool_calls
// blocks: ExtractToolCalls normalises those first.
func (m *AssistantMessage) ToolCalls() []Content {
	var calls []Content
	for _, c := range m.Content {
		if c.Type == ContentToolCall {
			calls = append(calls, c)
		}
	}
	return calls
}

// ToolResultMessage is the result of one tool call, as the conversation
// records it and the model sees it (spec section 11).
type ToolResultMessage struct {
	Role           string         `json:"role"`
	ToolCallID     string         `json:"tool_call_id"`
	ToolName       string         `json:"tool_name"`
	Content        []Content      `json:"content"`
	Details        map[string]any `json:"details,omitempty"`
	Usage          *Usage         `json:"usage,omitempty"`
	AddedToolNames []string       `json:"added_tool_names,omitempty"`
	IsError        bool           `json:"is_error"`
	// Terminate records that the result asked to end the run (spec
	// section 10), so that a run resumed after a crash ends as it would have.
	Terminate bool      `json:"terminate,omitempty"`
	Timestamp time.Time `json:"timestamp"`
}

// MessageRole implements Message.
func (*ToolResultMessage) MessageRole() string { return RoleTool }

// UnmarshalMessage decodes one message of a stored conversation, choosing its
// type by its "role".
func UnmarshalMessage(data []byte) (Message, error) {
	var probe struct {
		Role string `json:"role"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	var m Message
	switch probe.Role {
	case RoleUser:
		m = new(UserMessage)
	case RoleAssistant:
		m = new(AssistantMessage)
	case RoleTool, "toolResult":
		m = new(ToolResultMessage)
	default:
		return nil, fmt.Errorf("message: role %q is not one of user, assistant, tool", probe.Role)
	}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("%s message: %w", probe.Role, err)
	}
	return m, nil
}
