// Package input takes the fleet's input off NATS: the core subscriptions of
// the public subjects (messages, asks, aborts, steering, approval
// decisions), their payload checks and replies, the relay of asks and
// decisions through the input stream, and the durable, partitioned consumer
// of the stored input with its migration.
//
// It may import internal/bus (connection, subjects, reply guard, JetStream
// ensure), internal/bus/wire, internal/bus/events, internal/delegate (the
// parent headers of an ask sent by an agent), the domain types, tracing and
// nats.go; nothing of the orchestrator or the loop.
package input
