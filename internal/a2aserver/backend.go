package a2aserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// Backend is the fleet as the A2A server sees it. Every method may be
// called from many goroutines at once.
type Backend interface {
	// Agents returns the names of the agents.
	Agents() []string
	// Tools returns the tools agent's model sees; false for an unknown
	// agent.
	Tools(agent string) ([]agentfleet.ToolDef, bool)
	// Send publishes a user message with the client message id id on the
	// session's input subject.
	Send(ctx context.Context, agent, session, id string, content []agentfleet.Content) error
	// Load returns the session's stored history.
	Load(ctx context.Context, agent, session string) (*history.Loaded, error)
	// Follow passes the session's events to fn until stop is called; the
	// subscription is in place when it returns.
	Follow(agent, session string, fn func(*agentfleet.Event)) (stop func(), err error)
	// Abort aborts the session's active run.
	Abort(ctx context.Context, agent, session, reason string) (*agentfleet.AssistantMessage, error)
	// Decide sends a decision on a call that waits for approval.
	Decide(ctx context.Context, agent, session string, d *agentfleet.ApprovalDecision) (*agentfleet.ApprovalReply, error)
}

// Fleet is the Backend of the orchestrators reached on a NATS connection,
// with the sessions' histories read from their stream: any orchestrator
// of the prefix answers for any task, since nothing of a task is kept in
// this process.
type Fleet struct {
	NC       *bus.Conn
	Subjects bus.Subjects
	History  *history.Store
	// AgentNames and AgentTools answer Agents and Tools.
	AgentNames func() []string
	AgentTools func(agent string) ([]agentfleet.ToolDef, bool)
}

var _ Backend = (*Fleet)(nil)

// Agents implements Backend.
func (f *Fleet) Agents() []string { return f.AgentNames() }

// Tools implements Backend.
func (f *Fleet) Tools(agent string) ([]agentfleet.ToolDef, bool) { return f.AgentTools(agent) }

// Send implements Backend.
func (f *Fleet) Send(_ context.Context, agent, session, id string, content []agentfleet.Content) error {
	data, err := json.Marshal(struct {
		Content []agentfleet.Content `json:"content"`
		ID      string               `json:"id"`
	}{content, id})
	if err != nil {
		return err
	}
	return client.NewSessionClient(f.NC, f.Subjects).Send(agent, session, data)
}

// Load implements Backend.
func (f *Fleet) Load(ctx context.Context, agent, session string) (*history.Loaded, error) {
	return f.History.Load(ctx, agent, session)
}

// Follow implements Backend.
func (f *Fleet) Follow(agent, session string, fn func(*agentfleet.Event)) (func(), error) {
	return client.FollowEvents(f.NC, f.Subjects.Prefix+".events."+agent+"."+session+".>", fn)
}

// Abort implements Backend.
func (f *Fleet) Abort(ctx context.Context, agent, session, reason string) (*agentfleet.AssistantMessage, error) {
	return client.NewSessionClient(f.NC, f.Subjects).Abort(ctx, agent, session, reason)
}

// Decide implements Backend.
func (f *Fleet) Decide(ctx context.Context, agent, session string, d *agentfleet.ApprovalDecision) (*agentfleet.ApprovalReply, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("decision: %w", err)
	}
	return client.NewSessionClient(f.NC, f.Subjects).Decide(ctx, agent, session, data)
}
