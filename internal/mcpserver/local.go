package mcpserver

import (
	"context"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// Local returns the Backend of an orchestrator in this process: calls run
// through its pipeline (events on the session "mcp"), asks go through the
// fleet's ask subject, so that the session's owner runs them.
func Local(o *orchestrator.Orchestrator) Backend { return local{o} }

type local struct{ o *orchestrator.Orchestrator }

// Session is the session of the tool calls of MCP clients, in their events.
const Session = "mcp"

func (l local) Agents(context.Context) ([]string, error) { return l.o.Agents(), nil }

func (l local) Tools(_ context.Context, agent string) ([]agentfleet.ToolDef, error) {
	if err := l.o.CheckAgent(agent); err != nil {
		return nil, err
	}
	defs, _ := l.o.Tools(agent)
	return defs, nil
}

func (l local) CallTool(ctx context.Context, agent string, call agentfleet.ToolCall, progress func(any)) (*agentfleet.ToolResult, bool, error) {
	out, err := l.o.CallTool(ctx, agent, Session, call, progress)
	if err != nil {
		return nil, false, err
	}
	return out.Result, out.IsError, nil
}

func (l local) Ask(ctx context.Context, agent, session, text string, onEvent func(*agentfleet.Event)) (*agentfleet.AssistantMessage, error) {
	return l.o.Ask(ctx, agent, session, text, onEvent)
}
