// Package server runs the embedded nats-server with JetStream and guards its
// data directory, so that one orchestrator can be the whole deployment.
//
// It is the only package of the fleet that links nats-server, and only the
// orchestrator program, the benchmarks, the fault harness and tests import
// it; the programs that only connect (agentctl, toolworker) do not. It may
// import nats-server and the standard library, nothing of the fleet.
package server
