// Package fleet is fleet discovery and membership: the metadata a worker
// advertises for its tools and the announcements it publishes on
// <prefix>.fleet, the orchestrator's watch of the workers (info rounds,
// beats, expiry), the choice among workers that serve one tool, the bounds
// a foreign worker's tools must keep, and the fleet's status.
//
// It may import internal/bus (connection, subjects), internal/bus/wire,
// internal/bus/slots (the offers it hands the tool client), the domain
// types and nats.go with its micro API; nothing of the tool RPC, the
// orchestrator or the loop.
package fleet
