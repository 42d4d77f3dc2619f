package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/google/uuid"
)

// Remote returns the Backend of the orchestrators reached over NATS on
// nc: tools from <prefix>.ask.<agent> (the agent's tool list), calls on
// <prefix>.call.<agent>.<session> (run by an orchestrator's pipeline, with
// the session mcp-<random> of this backend in their events), asks on
// <prefix>.ask.<agent>.<session>. timeout bounds a tools request and a
// call (default 5 minutes; a call is bounded by its own timeout first).
func Remote(nc *bus.Conn, subjects bus.Subjects, timeout time.Duration) Backend {
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	return &remote{nc: nc, subjects: subjects, timeout: timeout, session: "mcp-" + uuid.NewString()[:8]}
}

type remote struct {
	nc       *bus.Conn
	subjects bus.Subjects
	timeout  time.Duration
	session  string
}

func (r *remote) tools(ctx context.Context, agent string) (*orchestrator.ToolsReply, error) {
	subject := r.subjects.AgentTools(agent)
	ctx, cancel := context.WithTimeout(ctx, min(r.timeout, 10*time.Second))
	defer cancel()
	m, err := r.nc.RequestWithContext(ctx, subject, nil)
	if err != nil {
		return nil, fmt.Errorf("tools of agent %s on %s: %w (is an orchestrator running with this --prefix?)", agent, subject, err)
	}
	var reply orchestrator.ToolsReply
	if err := json.Unmarshal(m.Data, &reply); err != nil {
		return nil, fmt.Errorf("the answer on %s is not a tools reply: %w", subject, err)
	}
	return &reply, nil
}

func (r *remote) Agents(ctx context.Context) ([]string, error) {
	reply, err := r.tools(ctx, "default")
	if err != nil {
		return nil, err
	}
	return reply.Agents, nil
}

func (r *remote) Tools(ctx context.Context, agent string) ([]agentfleet.ToolDef, error) {
	reply, err := r.tools(ctx, agent)
	if err != nil {
		return nil, err
	}
	if reply.Error != "" {
		return nil, fmt.Errorf("%s", reply.Error)
	}
	return reply.Tools, nil
}

func (r *remote) CallTool(ctx context.Context, agent string, call agentfleet.ToolCall, progress func(any)) (*agentfleet.ToolResult, bool, error) {
	if call.ID == "" {
		call.ID = "mcp-" + uuid.NewString()
	}
	var onEvent func(*agentfleet.Event)
	if progress != nil {
		onEvent = func(e *agentfleet.Event) {
			if e.Type == agentfleet.EventToolUpdate && e.ToolCallID == call.ID {
				progress(e.Partial)
			}
		}
	}
	reply, err := client.CallAgentTool(ctx, r.nc, r.subjects, agent, r.session,
		&client.CallRequestJSON{ID: call.ID, Name: call.Name, Arguments: call.Arguments}, onEvent, r.timeout)
	if err != nil {
		return nil, false, err
	}
	if reply.Result == nil {
		reply.Result = &agentfleet.ToolResult{Content: []agentfleet.Content{}}
	}
	return reply.Result, reply.IsError, nil
}

func (r *remote) Ask(ctx context.Context, agent, session, text string, onEvent func(*agentfleet.Event)) (*agentfleet.AssistantMessage, error) {
	return client.Ask(ctx, r.nc, r.subjects, agent, session, text, onEvent)
}
