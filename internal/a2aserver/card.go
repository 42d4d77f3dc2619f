package a2aserver

import (
	"fmt"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/agentfleet/agentfleet"
)

// Card is the Agent Card of agent served at url: a skill for a whole
// turn, one per tool the agent's model sees, streaming without push
// notifications, and, with bearer, the HTTP bearer scheme required.
func Card(agent, url string, tools []agentfleet.ToolDef, bearer bool, version string) *a2a.AgentCard {
	c := &a2a.AgentCard{
		Name:               agent,
		Description:        fmt.Sprintf("agentfleet agent %s: an LLM agent whose tools run on a fleet of workers; a task is one agent turn, durable across orchestrator restarts", agent),
		URL:                url,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion:    ProtocolVersion,
		Version:            version,
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json", "image/png", "image/jpeg"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "turn", Name: "agent turn", Tags: []string{"agent"},
			Description: fmt.Sprintf("send a message to agent %s; it answers after its model calls and tool calls, asking for approval (input-required) where its profile says", agent)}},
		Provider: &a2a.AgentProvider{Org: "agentfleet", URL: "https://github.com/agentfleet/agentfleet"},
	}
	for _, t := range tools {
		name := t.Label
		if name == "" {
			name = t.Name
		}
		c.Skills = append(c.Skills, a2a.AgentSkill{ID: "tool:" + t.Name, Name: name, Description: t.Description, Tags: []string{"tool"}})
	}
	if bearer {
		c.SecuritySchemes = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "bearer",
			Description: "the fleet's HTTP token (the orchestrator's --http-token-file)"}}
		c.Security = []a2a.SecurityRequirements{{"bearer": a2a.SecuritySchemeScopes{}}}
	}
	return c
}
