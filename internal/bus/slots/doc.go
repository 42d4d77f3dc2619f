// Package slots is what a caller of the fleet knows of its workers' slots,
// and what it decides from it: the gate that holds the calls of a tool
// beyond the fleet's capacity (Gate), and the choice of the worker a call
// goes to, the one with the most free slots (Choose, a pure function, and
// Table, the state it reads: each worker's declared limit, the limit its
// refusals taught, this caller's calls on it and the others' calls its
// frames report).
//
// It holds no connection and imports only the standard library: the tool
// client (internal/bus/toolrpc) sends the calls and tells the Table what
// came back.
package slots
