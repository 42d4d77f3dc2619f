package toolrpc

import (
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/ownership"
)

// Call is one tool call as the ToolClient sends it to the fleet: what a
// worker needs to run it, and what the client needs to bound and retry it.
// The trace context of the call travels in the context given to Execute.
type Call struct {
	// ID is the call's id: the worker sees it, and a cancel names it.
	ID string
	// Name is the tool's name; the call goes to that tool's subject.
	Name string
	// Args are the call's arguments.
	Args map[string]any
	// Timeout bounds each attempt of the call; zero means no bound.
	Timeout time.Duration
	// Retryable says that the tool is idempotent or read-only, so that an
	// attempt that timed out or whose worker was lost may be made again
	// (ClientConfig.MaxAttempts). Other calls are never retried.
	Retryable bool
	// Agent, Session and RunID say on whose behalf the call runs; workers
	// use them for logs and de-duplication.
	Agent, Session, RunID string
	// Allowed lists the tools the calling agent may use, for scripted
	// tools, whose call_tool it bounds; nil for other tools.
	Allowed []string
	// Gated lists the calling agent's tools left out of Allowed because
	// their calls need a person's decision, so that call_tool can say why
	// it refuses them.
	Gated []string
	// Fence is the ownership fence of the session the call runs for, sent
	// in HeaderFence; a zero Epoch sends none (a fleet without partition
	// table, a call outside any run). A worker that saw a later claim of
	// the partition refuses the call with an error matching ErrFenced.
	Fence ownership.Fence
	// Notify, if not nil, is told each time a request of the call is on
	// its way to a worker.
	Notify Notifier
}

// Notifier is told when a call's request is on its way to a worker: Sent
// is called once per attempt, and again for each resend after a busy
// refusal or no responders, on the goroutine of Execute. It must not
// block. (The pipeline publishes the call's tool.start then.)
type Notifier interface {
	Sent()
}
