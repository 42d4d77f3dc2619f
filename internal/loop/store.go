package loop

import "github.com/agentfleet/agentfleet"

// Store is where a session's loop keeps what must outlive the process: each
// message as it is appended to the history, each summary the model wrote,
// and the end of each run; and what it reads back of those records while a
// run goes on. The orchestrator implements it over the session's history
// writer; a Session with no Store keeps its history in memory only.
//
// Its methods are called from the run's goroutine, and, for tool results,
// from the goroutines of the calls of a batch, so they must be safe for
// concurrent use. They take no context: a store is bound to its session and
// gives up when that session is suspended, and an aborted run still stores
// its end.
type Store interface {
	// Append stores m, appended to the history by run runID, in order; tool
	// results are appended as each call ends. It returns once m is
	// stored, or kept to be stored with a later record where a crash
	// that loses it loses only what the run makes again (a store that
	// buffers: the orchestrator's history writer). An error means it
	// never will be (another orchestrator owns the session, this one is
	// stopping): the run is suspended.
	Append(runID string, m agentfleet.Message) error
	// AppendSummary stores a summary the model wrote for run runID, before
	// any request uses it; an error means it is not used.
	AppendSummary(runID string, sum *agentfleet.ContextSummary) error
	// EndRun stores the final message of a run before its run.end event is
	// emitted. An error suspends the run instead: no run.end.
	EndRun(final *agentfleet.AssistantMessage) error
	// Unexecuted reports whether a tool call of a resumed run is known
	// never to have run although the history holds no result for it (it
	// waits for a person's approval, or was refused): such a call goes
	// through the pipeline again, whatever its tool's annotations, instead
	// of getting the unknown-outcome result.
	Unexecuted(callID string) bool
}

// memoryStore is the Store of a Session configured without one: nothing is
// stored but the history in memory, and no call is known to be unexecuted.
type memoryStore struct{}

func (memoryStore) Append(string, agentfleet.Message) error                { return nil }
func (memoryStore) AppendSummary(string, *agentfleet.ContextSummary) error { return nil }
func (memoryStore) EndRun(*agentfleet.AssistantMessage) error              { return nil }
func (memoryStore) Unexecuted(string) bool                                 { return false }
