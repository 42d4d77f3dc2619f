package orchestrator

import (
	"encoding/json"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
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

// answerTools subscribes the agents' tool requests. Every orchestrator of
// the prefix knows the same agents and fleet, so any of them answers as
// well as another; the queue group has one of them answer.
func (o *Orchestrator) answerTools() (*nats.Subscription, error) {
	sub, err := o.nc.QueueSubscribe(o.subjects.AgentToolsWildcard(), bus.QueueInput, func(m *nats.Msg) {
		if !o.mayAnswer(m) {
			return
		}
		b, _ := json.Marshal(o.toolsReply(m.Subject))
		if err := o.nc.Publish(m.Reply, b); err != nil {
			o.log.Warn("tools reply", "subject", m.Subject, "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", o.subjects.AgentToolsWildcard(), err)
	}
	return sub, nil
}

func (o *Orchestrator) toolsReply(subject string) *ToolsReply {
	name, err := o.subjects.ParseAgentTools(subject)
	if err != nil {
		return &ToolsReply{Tools: []agentfleet.ToolDef{}, Error: err.Error()}
	}
	if err := o.CheckAgent(name); err != nil {
		return &ToolsReply{Agent: name, Tools: []agentfleet.ToolDef{}, Agents: o.Agents(), Error: err.Error()}
	}
	defs, _ := o.Tools(name)
	return &ToolsReply{Agent: name, Tools: defs, Agents: o.Agents()}
}

// mayAnswer reports whether the orchestrator may answer m on its reply
// subject (see bus.ReplyGuard); a request whose reply is refused is dropped
// with a log line, and nothing is published on that subject.
func (o *Orchestrator) mayAnswer(m *nats.Msg) bool {
	if m.Reply == "" {
		return false
	}
	if err := o.replies.Check(m.Reply); err != nil {
		o.log.Warn("request not answered", "subject", m.Subject, "err", err)
		return false
	}
	return true
}
