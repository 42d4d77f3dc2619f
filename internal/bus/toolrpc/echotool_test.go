package toolrpc_test

import (
	"context"
	"encoding/json"

	"github.com/agentfleet/agentfleet"
)

// echoTool is a tool named name that answers "ok".
func echoTool(name string) *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: name, Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult("ok"), nil
		}),
	}
}
