// Package wire is the tool protocol's codec: the MessagePack frames and call
// requests between the orchestrator and its workers, their bounded decoder
// (every declared length checked against the bytes that remain, nesting and
// allocation bounded) and the JSON payloads of the public subjects.
//
// It holds no connection: it may import the domain types, msgpack and the
// standard library, and internal/bus for subjects and tokens; nothing that
// talks to NATS.
package wire
