// Package events publishes the events of runs on the event subjects and
// replays them from the event stream, for the orchestrator, the dashboard
// and agentctl.
//
// It may import internal/bus (connection, subjects), the domain types and
// nats.go with its JetStream API; nothing of the orchestrator or the loop.
package events
