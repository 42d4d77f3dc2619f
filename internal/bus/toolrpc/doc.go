// Package toolrpc is the tool protocol over NATS: the ToolClient that sends
// a call to a worker and follows its frames (ack, progress, heartbeats,
// result, busy refusals, lost workers, the in-flight gate), and the
// ToolServer that serves a worker's tools as a NATS micro service, with its
// admission, drain, cancellation and traces.
//
// It may import internal/bus (connection, subjects, reply guard),
// internal/bus/wire (the codec), internal/bus/fleet (the metadata and
// announcements a worker publishes), the domain types, tracing and nats.go.
// The client takes a plain Call and returns its own errors (ErrTimeout,
// ErrWorkerLost, ErrNoResponders, ResultError); it must not import the
// pipeline, the loop or the orchestrator, which adapt it to their own
// types.
package toolrpc
