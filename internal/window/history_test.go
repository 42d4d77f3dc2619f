package window_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

// history returns n past turns, each a user message, an assistant message
// calling two tools, their results and a text answer, every message about
// size bytes long.
func history(n, size int) []agentfleet.Message {
	var out []agentfleet.Message
	pad := strings.Repeat("x", size)
	for i := range n {
		a, b := fmt.Sprintf("t%d#a", i), fmt.Sprintf("t%d#b", i)
		out = append(out,
			agentfleet.NewUserMessage(fmt.Sprintf("question %d %s", i, pad)),
			callMsg(a, b),
			result(a, "result a "+pad), result(b, "result b "+pad),
			answer(fmt.Sprintf("answer %d %s", i, pad)),
		)
	}
	return out
}

// callMsg is an assistant message calling a tool for each id, the tool
// named by the id's part before "#".
func callMsg(ids ...string) *agentfleet.AssistantMessage {
	m := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, StopReason: agentfleet.StopReasonToolUse}
	for _, id := range ids {
		name, _, _ := strings.Cut(id, "#")
		m.Content = append(m.Content, agentfleet.Content{Type: agentfleet.ContentToolCall, ID: id, Name: name, Arguments: json.RawMessage(`{}`)})
	}
	return m
}

func result(id, text string) *agentfleet.ToolResultMessage {
	name, _, _ := strings.Cut(id, "#")
	return &agentfleet.ToolResultMessage{Role: agentfleet.RoleTool, ToolCallID: id, ToolName: name, Content: []agentfleet.Content{agentfleet.Text(text)}}
}

func answer(text string) *agentfleet.AssistantMessage {
	return &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text(text)}, StopReason: agentfleet.StopReasonStop}
}

// roles renders messages as their roles, a user message with its text and
// a tool result with its tool.
func roles(ms []agentfleet.Message) string {
	var out []string
	for _, m := range ms {
		s := m.MessageRole()
		switch m := m.(type) {
		case *agentfleet.UserMessage:
			s += ":" + agentfleet.JoinText(m.Content)
		case *agentfleet.ToolResultMessage:
			s += ":" + m.ToolName
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// checkPairs fails unless every tool result of msgs follows the assistant
// message that called it, every call of an assistant message has its
// result, and the first message is a user message.
func checkPairs(t *testing.T, msgs []agentfleet.Message) {
	t.Helper()
	if len(msgs) == 0 {
		return
	}
	if _, ok := msgs[0].(*agentfleet.UserMessage); !ok {
		t.Errorf("the first message is a %s, want a user message", msgs[0].MessageRole())
	}
	open := map[string]bool{}
	for i, m := range msgs {
		switch m := m.(type) {
		case *agentfleet.AssistantMessage:
			for id := range open {
				t.Errorf("message %d: call %s has no result before it", i, id)
			}
			open = map[string]bool{}
			for _, c := range m.ToolCalls() {
				open[c.ID] = true
			}
		case *agentfleet.ToolResultMessage:
			if !open[m.ToolCallID] {
				t.Errorf("message %d: result of %s without its call before it", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			for id := range open {
				t.Errorf("message %d: call %s has no result before it", i, id)
			}
		}
	}
}
