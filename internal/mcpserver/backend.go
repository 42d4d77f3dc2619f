// Package mcpserver serves the fleet as an MCP server: the tools an agent
// profile allows, and one ask_<agent> tool per agent that runs a whole
// agent turn. It serves streamable HTTP (stateless, so that any
// orchestrator answers any request) and stdio, over a Backend: the
// orchestrator in the same process, or one reached over NATS.
package mcpserver

import (
	"context"

	"github.com/agentfleet/agentfleet"
)

// Backend is what the MCP server serves. Every method may be called from
// many goroutines at once.
type Backend interface {
	// Agents returns the names of the agents.
	Agents(ctx context.Context) ([]string, error)
	// Tools returns the tools agent sees, in order; it fails for an
	// unknown agent with an error that names the known ones.
	Tools(ctx context.Context, agent string) ([]agentfleet.ToolDef, error)
	// CallTool runs one call of agent's tools through the pipeline, and
	// returns its result and whether it is an error result; progress
	// receives the call's partial results. The error is for a call that
	// could not be taken at all (an unknown agent, no orchestrator).
	CallTool(ctx context.Context, agent string, call agentfleet.ToolCall, progress func(partial any)) (*agentfleet.ToolResult, bool, error)
	// Ask runs one agent turn in session with text as the user's message
	// and returns its final message, passing the session's events to
	// onEvent meanwhile. When ctx ends first, the run is aborted.
	Ask(ctx context.Context, agent, session, text string, onEvent func(*agentfleet.Event)) (*agentfleet.AssistantMessage, error)
}
