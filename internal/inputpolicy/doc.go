// Package inputpolicy is what a session does with each input delivery, as
// pure functions: Step takes what the session knows (State) and one
// delivery of an input message (Delivery) and returns the new state and the
// actions to carry out (start a run, wait for one, answer from the store,
// acknowledge, deliver again, reject, ...). Aborted, Decided, Ended and
// Suspended do the same for the answers that come back later: the loop's
// word on an abort, the approval gate's on a decision, a run that ended, a
// session that is given up.
//
// The package makes no I/O and reads no clock: times come in with the
// delivery. It imports the standard library only (no NATS, no store, no
// loop); the orchestrator builds the State and the Delivery, calls Step, and
// performs the actions.
package inputpolicy
