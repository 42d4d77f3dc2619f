package orchestrator

import (
	"testing"

	"github.com/agentfleet/agentfleet"
)

// TestMustFlush decides, record by record, what a run stores at once and
// what waits in the history writer's buffer.
func TestMustFlush(t *testing.T) {
	rerunnable := func(tool string) bool { return tool == "read" || tool == "retry" }
	calls := func(names ...string) *agentfleet.AssistantMessage {
		m := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, StopReason: agentfleet.StopReasonToolUse}
		for _, n := range names {
			m.Content = append(m.Content, agentfleet.Content{Type: agentfleet.ContentToolCall, ID: "c_" + n, Name: n})
		}
		return m
	}
	result := func(tool string) *agentfleet.ToolResultMessage {
		return &agentfleet.ToolResultMessage{Role: agentfleet.RoleTool, ToolCallID: "c_" + tool, ToolName: tool}
	}
	cut := calls("write")
	cut.StopReason = agentfleet.StopReasonLength
	for _, tc := range []struct {
		name string
		m    agentfleet.Message
		want bool
	}{
		{"user message waits: its input is acked only after the run end is stored", agentfleet.NewUserMessage("hi"), false},
		{"an A2A task's user message is stored at once: any orchestrator reads the task from the history", &agentfleet.UserMessage{Role: agentfleet.RoleUser, ID: "a2a-0123"}, true},
		{"final answer waits for the run end", &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("done")}}, false},
		{"calls all read-only or idempotent wait", calls("read", "retry"), false},
		{"a call with side effects is stored before it runs", calls("read", "write"), true},
		{"a call of an unknown tool is stored before it goes out", calls("nosuch"), true},
		{"calls cut off at the token limit never run", cut, false},
		{"result of a re-runnable call waits", result("read"), false},
		{"result of a call with side effects is stored at once", result("write"), true},
		{"result of an unknown tool is stored at once", result("nosuch"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustFlush(tc.m, rerunnable); got != tc.want {
				t.Errorf("mustFlush = %v, want %v", got, tc.want)
			}
		})
	}
}
