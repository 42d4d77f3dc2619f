// Package erase deletes a session everywhere the fleet keeps it, for a
// data-protection request: its history, its stored input and approval
// decisions, its events, and the objects its tools put in the object store
// (Delete); and it answers the public delete subject,
// <prefix>.delete.<agent>.<session>, with it (Serve).
//
// A delete first tells the orchestrators to stop the session
// (<prefix>.erase.<agent>.<session>, orchestrators only): the one that holds
// it in memory, in the middle of a run maybe, drops it and answers once its
// run stopped, so that it writes and publishes nothing more of it. Then the
// session's subjects are purged. An owner that does not answer (dead, or
// cut off) is fenced by the store: its history appends expect a record the
// purge removed and are refused (history.ErrFenced). The runs the owner
// stopped are marked before the session's objects are swept
// (objref.Store.MarkErased), so that what their calls still store is
// deleted by the worker that stores it.
//
// Its concern is removing a session's records. It imports the NATS client
// and JetStream, internal/bus (subjects, reply guard), internal/bus/guarded
// (the runner of its subjects) and internal/bus/objref (the session's
// objects); never the orchestrator nor
// the agent core, which it reaches through Config.Stop.
package erase
