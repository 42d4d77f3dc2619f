package orchestrator

import (
	"context"
	"errors"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/services"
)

// ToolsReply is the answer to a request on Subjects.AgentTools: the tool
// definitions the agent's store holds, in the order the model sees them,
// or why there are none.
type ToolsReply = services.ToolsReply

// agentServices is the orchestrator as the request services see it.
type agentServices struct{ o *Orchestrator }

var _ services.Agents = agentServices{}

// AgentTools returns the tools of agentName and the names of all agents.
func (s agentServices) AgentTools(agentName string) ([]agentfleet.ToolDef, []string, error) {
	agents := s.o.Agents()
	if err := s.o.CheckAgent(agentName); err != nil {
		return nil, agents, err
	}
	defs, _ := s.o.Tools(agentName)
	return defs, agents, nil
}

// CallTool runs the call with Orchestrator.CallTool.
func (s agentServices) CallTool(ctx context.Context, agentName, session string, call agentfleet.ToolCall) (*services.CallOutcome, error) {
	out, err := s.o.CallTool(ctx, agentName, session, call, nil)
	if err != nil {
		return nil, err
	}
	return &services.CallOutcome{Result: out.Result, IsError: out.IsError, Kind: string(out.Kind)}, nil
}

// SessionHistory loads a session's stored records for a history page.
func (s agentServices) SessionHistory(ctx context.Context, agentName, session string) (*history.Loaded, error) {
	if err := s.o.CheckAgent(agentName); err != nil {
		return nil, err
	}
	h := s.o.opened.Load()
	if h == nil {
		return nil, errors.New("no stored history here: this orchestrator keeps sessions in memory (no JetStream), or is still starting")
	}
	return h.Load(ctx, agentName, session)
}
