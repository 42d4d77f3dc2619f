// Package fleetexec adapts the fleet's tool client to the pipeline: its
// Executor turns a pipeline.Prepared into the plain toolrpc.Call the client
// sends, and the client's errors into the pipeline's (ErrTimeout,
// ErrWorkerLost, ErrNoResponders, ResultError), so that neither the
// transport imports the agent core nor the core the transport.
//
// It may import internal/pipeline, internal/bus/toolrpc, the plain fence
// values of internal/bus/ownership and the domain types, nothing else of
// the module.
package fleetexec
