// Package payload is the orchestrator's side of results that travel by
// reference (internal/bus/objref): it checks each ref block of a result
// against the object store (the object exists, whole, in the session's
// name; its size and digest are the store's, not the worker's word) and
// gives the model a bounded view of it: the head of a text file, a small
// image inline, a description of anything else. The orchestrator passes
// references on; it reads no more of an object than that view.
package payload
