package delegate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet"
)

// TransferPrefix begins the name of the tool that hands a conversation
// over to an agent, transfer_to_<agent>.
const TransferPrefix = "transfer_to_"

// TransferName returns the name of the tool that hands over to agent.
func TransferName(agent string) string { return TransferPrefix + agent }

// TransferTool returns the tool that hands the conversation over to agent:
// arguments {reason?}, not parallel, idempotent (a run resumed after a
// crash calls it again, storing the same handoff once more rather than
// calling its outcome unknown). It has no handler: the orchestrator runs
// it, and its result ends the run (TransferResult).
func TransferTool(agent string) *agentfleet.Tool {
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"reason": map[string]any{"type": "string", "description": "why the conversation goes to agent " + agent},
		},
		"additionalProperties": false,
	})
	return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{
		Name: TransferName(agent), Label: "transfer to " + agent,
		Description: "Hand this conversation over to agent " + agent + ": this run ends, and agent " + agent + " answers the next messages, with the conversation so far.",
		InputSchema: schema, Annotations: agentfleet.Annotations{Idempotent: true},
	}}
}

// MaxReasonBytes bounds the reason of a handoff.
const MaxReasonBytes = 1024

// TransferArgs reads the reason of a call of tool ("" when none); the error
// names the tool and the argument.
func TransferArgs(tool string, args map[string]any) (string, error) {
	v, present := args["reason"]
	if !present || v == nil {
		return "", nil
	}
	r, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("Tool %s: argument reason must be a string", tool)
	}
	if len(r) > MaxReasonBytes {
		return "", fmt.Errorf("Tool %s: argument reason is %d bytes long, the limit is %d", tool, len(r), MaxReasonBytes)
	}
	return strings.TrimSpace(r), nil
}

// TransferResult is the result of a call that handed the conversation from
// agent from over to agent to: it ends the run (Terminate), and its text is
// the run's last word, which the client reads as its answer.
func TransferResult(from, to, reason string) *agentfleet.ToolResult {
	text := fmt.Sprintf("Agent %s handed this conversation over to agent %s, which answers your next messages.", from, to)
	if reason != "" {
		text += " Reason: " + reason
	}
	return &agentfleet.ToolResult{
		Content: []agentfleet.Content{agentfleet.Text(text)}, Terminate: true,
		Details: map[string]any{"handoff_from": from, "handoff_to": to},
	}
}

// Serving decides which agent serves a session addressed to agent address,
// given the targets of its stored handoff records in order: the last one
// that known (the agents this orchestrator runs) holds; address when there
// is none. A handoff to an agent not known (a profile removed since) is
// passed over, and named in skipped, so that the session stays with the
// agent that served it before rather than with none.
func Serving(address string, handoffs []string, known func(string) bool) (serving string, skipped []string) {
	serving = address
	for _, to := range handoffs {
		if !known(to) {
			skipped = append(skipped, to)
			continue
		}
		serving = to
	}
	return serving, skipped
}
