package orchestrator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

// TestAgentsProfile: the agents a profile may ask, and the errors that name
// the file, the agent and the entry.
func TestAgentsProfile(t *testing.T) {
	ps, err := ParseProfiles([]byte("agents:\n  - name: boss\n    agents: [researcher, coder]\n    agent_timeout: 90s\n  - name: researcher\n  - name: coder\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ps[0].Agents, ","); got != "researcher,coder" || ps[0].AskTimeout() != 90*time.Second {
		t.Errorf("boss asks %q within %v", got, ps[0].AskTimeout())
	}
	if ps[1].AskTimeout() != 5*time.Minute {
		t.Errorf("default agent_timeout = %v, want 5m", ps[1].AskTimeout())
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agents:\n  - name: boss\n    agents: [researcher]\n", `agent "boss": agents entry 1: no agent "researcher" is defined (the agents are boss)`},
		{"agents:\n  - name: boss\n    agents: [boss]\n", `agent "boss": agents entry 1 names the agent itself`},
		{"agents:\n  - name: boss\n    agents: [r, r]\n  - name: r\n", `agent "boss": agents entry 2: agent "r" is listed twice`},
		{"agents:\n  - name: boss\n    agent_timeout: never\n", `agent "boss": agent_timeout "never" is not a positive duration`},
		{"agents:\n  - name: boss\n    agents: r\n", `cannot unmarshal`},
	} {
		if _, err := ParseProfiles([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseProfiles(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
	file := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(file, []byte("agents:\n  - name: boss\n    agents: [ghost]\n"), 0o644)
	if _, err := LoadProfiles(file); err == nil || !strings.Contains(err.Error(), file+`: agent "boss": agents entry 1: no agent "ghost"`) {
		t.Errorf("LoadProfiles = %v, want the file, the agent and the entry named", err)
	}
}

// TestAsksAgent: an assistant message that calls an ask tool is stored
// before its calls go out; other messages are left to the flush rule.
func TestAsksAgent(t *testing.T) {
	asks := map[string]string{"ask_r": "r"}
	call := func(name string) agentfleet.Content {
		return agentfleet.Content{Type: agentfleet.ContentToolCall, ID: "c1", Name: name, Arguments: json.RawMessage(`{}`)}
	}
	for _, tc := range []struct {
		name string
		m    agentfleet.Message
		asks map[string]string
		want bool
	}{
		{"a call of an ask tool", &agentfleet.AssistantMessage{Content: []agentfleet.Content{call("echo"), call("ask_r")}, StopReason: agentfleet.StopReasonToolUse}, asks, true},
		{"other calls only", &agentfleet.AssistantMessage{Content: []agentfleet.Content{call("echo")}, StopReason: agentfleet.StopReasonToolUse}, asks, false},
		{"cut off: its calls never run", &agentfleet.AssistantMessage{Content: []agentfleet.Content{call("ask_r")}, StopReason: agentfleet.StopReasonLength}, asks, false},
		{"an agent that asks none", &agentfleet.AssistantMessage{Content: []agentfleet.Content{call("ask_r")}, StopReason: agentfleet.StopReasonToolUse}, nil, false},
		{"the call's result", &agentfleet.ToolResultMessage{ToolName: "ask_r"}, asks, false},
		{"a user message", agentfleet.NewUserMessage("ask_r"), asks, false},
	} {
		if got := asksAgent(tc.m, tc.asks); got != tc.want {
			t.Errorf("%s: asksAgent = %v, want %v", tc.name, got, tc.want)
		}
	}
}
