package services

import (
	"encoding/json"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/nats-io/nats.go"
)

// answerCalls subscribes Subjects.Call for agentctl mcp: each request is
// one call run by Agents.CallTool, answered with a bus.CallReplyJSON.
func (a *answerer) answerCalls() (*nats.Subscription, error) {
	return a.subscribe(a.cfg.Subjects.CallWildcard(), func(m *nats.Msg) {
		if !a.mayAnswer(m) {
			return // the call is not run
		}
		go a.answerCall(m)
	})
}

func (a *answerer) answerCall(m *nats.Msg) {
	reply := func(r *client.CallReplyJSON) {
		b, err := json.Marshal(r)
		if err != nil {
			b, _ = json.Marshal(&client.CallReplyJSON{Error: fmt.Sprintf("the result does not encode: %v", err)})
		}
		if err := a.nc.Publish(m.Reply, b); err != nil {
			a.cfg.Logger.Warn("call reply", "subject", m.Subject, "err", err)
		}
	}
	agentName, session, err := a.cfg.Subjects.ParseCall(m.Subject)
	if err != nil {
		reply(&client.CallReplyJSON{Error: err.Error()})
		return
	}
	var req client.CallRequestJSON
	if err := json.Unmarshal(m.Data, &req); err != nil {
		reply(&client.CallReplyJSON{Error: fmt.Sprintf("call on %s: the request is not a JSON call: %v", m.Subject, err)})
		return
	}
	out, err := a.agents.CallTool(a.ctx, agentName, session, agentfleet.ToolCall{ID: req.ID, Name: req.Name, Arguments: req.Arguments})
	if err != nil {
		reply(&client.CallReplyJSON{Error: err.Error()})
		return
	}
	reply(&client.CallReplyJSON{Result: out.Result, IsError: out.IsError, Outcome: out.Kind})
}
