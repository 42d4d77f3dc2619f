// Package client is the client of the fleet's public subjects: it sends
// messages, asks, aborts and approval decisions to agents' sessions, calls
// an agent's tools directly and follows the events of a run, for agentctl,
// the dashboard, the MCP server and tests.
//
// It may import internal/bus (connection, subjects), the domain types and
// nats.go; nothing of the orchestrator's side.
package client
