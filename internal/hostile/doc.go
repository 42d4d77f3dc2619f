// Package hostile holds the fleet's hostile-client tests: a real fleet (the
// orchestrator and tool worker binaries, as child processes) on a real
// nats-server running the shipped deploy/nats/nats.conf, attacked by a
// client with ordinary credentials. Each attack is a case that must be
// refused, checked against what the server stores and what a spy with
// every right sees published; after each, the fleet still serves.
//
// The package has no code of its own outside its tests.
package hostile
