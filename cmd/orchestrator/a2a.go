package main

import (
	"github.com/agentfleet/agentfleet/internal/a2aserver"
)

// startA2A serves every agent over A2A at /a2a/<agent> of --http, and
// the default agent's card at /.well-known/agent-card.json, once the
// orchestrator serves. It needs the stored histories (durability): a
// task's state is read from them, so that any orchestrator answers it.
// The listener's guard checks the credentials, which the cards advertise.
func (m *Main) startA2A() {
	if m.http == nil || !m.A2A {
		return
	}
	nc, subjects, store := m.orch.Stored()
	if store == nil {
		m.logger.Warn("A2A not served: it needs JetStream durability (--durable), since a task's state is read from the stored history")
		return
	}
	h := a2aserver.New(a2aserver.Config{Logger: m.logger, Bearer: m.guard.Protected(), Backend: &a2aserver.Fleet{
		NC: nc, Subjects: subjects, History: store, AgentNames: m.orch.Agents, AgentTools: m.orch.Tools,
	}}).Handler()
	m.http.Handle("/a2a", h)
	m.http.Handle("/a2a/", h)
	m.http.Handle(a2aserver.WellKnown, h)
	m.logger.Info("A2A server", "url", "http://"+m.http.Addr()+"/a2a/<agent>", "card", "http://"+m.http.Addr()+a2aserver.WellKnown)
}
