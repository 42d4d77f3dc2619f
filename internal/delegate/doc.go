// Package delegate holds the decisions of one agent asking another as a
// tool (a profile's agents: list, each agent a tool ask_<name>): the tool's
// definition and arguments, the child session and message id derived from
// the parent's tool call, the bounds on depth and cycles, the headers that
// carry the parent on the ask, and the tool result made of the child's
// final message.
//
// Everything here is a pure function of its arguments: the orchestrator
// sends the ask and waits for its answer (internal/bus/client), and the
// input reads the headers (internal/bus/input). It imports the domain
// types and the token rules of internal/bus, nothing else of the module.
package delegate
