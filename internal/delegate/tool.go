package delegate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
)

// ToolPrefix begins the name of the tool that asks an agent, ask_<agent>:
// the name /mcp gives the same ask (mcpserver.AskPrefix).
const ToolPrefix = "ask_"

// DefaultTimeout bounds the wait for a child's answer when the profile sets
// no agent_timeout.
const DefaultTimeout = 5 * time.Minute

// ToolName returns the name of the tool that asks agent.
func ToolName(agent string) string { return ToolPrefix + agent }

// Tool returns the tool that asks agent: arguments {message, session?},
// parallel (two children of one batch run at once), idempotent (a call run
// again after a crash is answered from the child's stored history, not run
// twice), bounded by timeout. It has no handler: the orchestrator runs it.
func Tool(agent string, timeout time.Duration) *agentfleet.Tool {
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"message": map[string]any{"type": "string", "description": "what to ask agent " + agent},
			"session": map[string]any{"type": "string", "description": "a session of agent " + agent + " to continue, as an earlier call's result named it; default a new session for this call"},
		},
		"required":             []string{"message"},
		"additionalProperties": false,
	})
	return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{
		Name: ToolName(agent), Label: "ask " + agent,
		Description: "Ask agent " + agent + " and get its final answer. It runs with its own tools, in a session of its own.",
		InputSchema: schema, Annotations: agentfleet.Annotations{Idempotent: true}, Parallel: true,
		TimeoutMS: timeout.Milliseconds(),
	}}
}

// Args reads the arguments of a call of tool: the message, and the session
// to continue ("" for the call's own). A session to continue must be a
// child session (IsChildSession), as an earlier call's result names it:
// the model may not reach into a session of the asked agent that a client,
// or another parent, made, whose name it could guess. The error names the
// tool and the argument.
func Args(tool string, args map[string]any) (message, session string, err error) {
	m, ok := args["message"].(string)
	if !ok || strings.TrimSpace(m) == "" {
		return "", "", fmt.Errorf("Tool %s: argument message must be a non-empty string", tool)
	}
	if v, present := args["session"]; present && v != nil {
		s, ok := v.(string)
		if !ok {
			return "", "", fmt.Errorf("Tool %s: argument session must be a string", tool)
		}
		if s != "" {
			if err := bus.CheckToken("session", s); err != nil {
				return "", "", fmt.Errorf("Tool %s: argument session: %w", tool, err)
			}
			if !IsChildSession(s) {
				return "", "", fmt.Errorf("Tool %s: argument session %q is not a session that an earlier call returned (d- and 24 hex digits, in the result's details); leave it out for a new one", tool, s)
			}
		}
		session = s
	}
	return m, session, nil
}

// ErrNoAnswer is the error result of a child that gave no final message.
var ErrNoAnswer = errors.New("no final message")

// Result returns the tool result of a call answered by final, the final
// message of agent's run in session: its text, with the agent, session and
// run in Details so that a dashboard can link to the child run, and the
// run's usage as the result's, so that its cost shows on the call. A run that
// did not stop normally (an error, an abort, a budget, the turn limit) is
// an error result that says how it stopped.
func Result(agent, session string, final *agentfleet.AssistantMessage) (*agentfleet.ToolResult, bool) {
	if final == nil {
		return agentfleet.ErrorResult(fmt.Sprintf("agent %s: %v", agent, ErrNoAnswer)), true
	}
	text := agentfleet.JoinText(final.Content)
	res := &agentfleet.ToolResult{Details: map[string]any{"agent": agent, "session": session, "run_id": final.RunID}, Usage: final.Usage}
	switch final.StopReason {
	case agentfleet.StopReasonStop, agentfleet.StopReasonToolTerminated, "":
		res.Content = []agentfleet.Content{agentfleet.Text(text)}
		return res, false
	}
	msg := fmt.Sprintf("agent %s stopped with %s", agent, final.StopReason)
	if final.ErrorMessage != "" {
		msg += ": " + final.ErrorMessage
	}
	if text != "" {
		msg += "; its last text: " + text
	}
	res.Content = []agentfleet.Content{agentfleet.Text(msg)}
	return res, true
}
