package toolrpc

import (
	"errors"

	"github.com/agentfleet/agentfleet"
)

// Errors that Execute wraps, so that its callers can tell how a call ended
// with errors.Is.
var (
	// ErrTimeout: the call's timeout ended before its worker was done.
	ErrTimeout = errors.New("tool call timed out")
	// ErrWorkerLost: no worker took the call within the ack timeout, or
	// the worker that took it went silent for its heartbeat window.
	ErrWorkerLost = errors.New("worker lost")
	// ErrNoResponders: no worker is subscribed to the tool's subject.
	ErrNoResponders = errors.New("no worker serves the tool")
)

// ResultError is the error of a call whose worker answered with an error
// result: it carries that result, so that the caller can report the
// tool's own content and details rather than a bare message. Its text is
// the result's text.
type ResultError struct {
	Result *agentfleet.ToolResult
}

func (e *ResultError) Error() string { return agentfleet.JoinText(e.Result.Content) }
