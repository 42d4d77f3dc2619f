package builtin

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet"
)

var echoSchema = mustSchema(`{
	"type": "object",
	"properties": {
		"text": {
			"type": "string",
			"description": "The text to return unchanged"
		}
	},
	"required": ["text"],
	"additionalProperties": false
}`)

// Echo returns the echo tool, which answers {"text": string} with the same
// text. It is useful for testing the fleet end to end.
func Echo() *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        "echo",
			Label:       "Echo",
			Description: "Returns the given text unchanged.",
			InputSchema: echoSchema,
			Annotations: agentfleet.Annotations{ReadOnly: true, Idempotent: true},
			Parallel:    true,
		},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("echo: %w", err)
			}
			text, _, err := stringArg("echo", call.Arguments, "text", true)
			if err != nil {
				return nil, err
			}
			return agentfleet.TextResult(text), nil
		}),
	}
}
