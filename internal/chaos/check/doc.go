// Package check is the checker of the fault-injection harness: given the
// load plan and what the fleet stored (the history records and the ledger
// tool's executions), as plain values, it finds every violation of the
// durability guarantees of docs/DESIGN.md, by class, with examples.
//
// It does no I/O: reading the streams is the harness's, so that the checker
// is a pure function of its inputs. It imports only the message types of
// the root package and the deterministic model, internal/chaos/model, which
// says what each run must have answered.
package check
