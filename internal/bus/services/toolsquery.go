package services

import (
	"encoding/json"

	"github.com/agentfleet/agentfleet"
	"github.com/nats-io/nats.go"
)

// ToolsReply is the answer to a request on Subjects.AgentTools: the tool
// definitions the agent's store holds, in the order the model sees them,
// or why there are none.
type ToolsReply struct {
	Agent string               `json:"agent"`
	Tools []agentfleet.ToolDef `json:"tools"`
	// Agents names every agent of the orchestrator, sorted.
	Agents []string `json:"agents,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// answerTools subscribes the agents' tool requests.
func (a *answerer) answerTools() (*nats.Subscription, error) {
	return a.subscribe(a.cfg.Subjects.AgentToolsWildcard(), func(m *nats.Msg) {
		if !a.mayAnswer(m) {
			return
		}
		b, _ := json.Marshal(a.toolsReply(m.Subject))
		if err := a.nc.Publish(m.Reply, b); err != nil {
			a.cfg.Logger.Warn("tools reply", "subject", m.Subject, "err", err)
		}
	})
}

func (a *answerer) toolsReply(subject string) *ToolsReply {
	name, err := a.cfg.Subjects.ParseAgentTools(subject)
	if err != nil {
		return &ToolsReply{Tools: []agentfleet.ToolDef{}, Error: err.Error()}
	}
	defs, agents, err := a.agents.AgentTools(name)
	if err != nil {
		return &ToolsReply{Agent: name, Tools: []agentfleet.ToolDef{}, Agents: agents, Error: err.Error()}
	}
	return &ToolsReply{Agent: name, Tools: defs, Agents: agents}
}
