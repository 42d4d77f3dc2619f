package pipeline

import (
	"errors"
	"time"

	"github.com/agentfleet/agentfleet"
)

// Kind classifies how a call ended, for events, metrics and retries.
type Kind string

// The kinds of outcome. Everything but OK is an error result.
const (
	OK           Kind = "ok"
	Failed       Kind = "error"
	NotFound     Kind = "not_found"
	Invalid      Kind = "invalid"
	Blocked      Kind = "blocked"
	Aborted      Kind = "aborted"
	Skipped      Kind = "skipped"
	Timeout      Kind = "timeout"
	WorkerLost   Kind = "worker_lost"
	NoResponders Kind = "no_responders"
	Truncated    Kind = "truncated"
)

// Errors that executors wrap so that the pipeline reports the right outcome.
var (
	ErrTimeout      = errors.New("tool call timed out")
	ErrWorkerLost   = errors.New("worker lost")
	ErrNoResponders = errors.New("no worker serves the tool")
)

// Outcome is a call after all phases (spec finalizedOutcome): the original
// call, the final result and whether it is an error.
type Outcome struct {
	Call     agentfleet.ToolCall
	Result   *agentfleet.ToolResult
	IsError  bool
	Kind     Kind
	Duration time.Duration

	msg *agentfleet.ToolResultMessage
}

// Message converts o to the tool result message the conversation records
// (spec createToolResultMessage). It returns the same message on every call.
func (o *Outcome) Message() *agentfleet.ToolResultMessage {
	if o.msg != nil {
		return o.msg
	}
	r := o.Result
	if r == nil {
		r = &agentfleet.ToolResult{}
	}
	content := r.Content
	if content == nil {
		content = []agentfleet.Content{}
	}
	o.msg = &agentfleet.ToolResultMessage{
		Role:       agentfleet.RoleTool,
		ToolCallID: o.Call.ID,
		ToolName:   o.Call.Name,
		Content:    content,
		Details:    r.Details,
		Usage:      r.Usage,
		IsError:    o.IsError,
		Terminate:  r.Terminate,
		Timestamp:  time.Now().UTC(),
	}
	return o.msg
}

func errorOutcome(call agentfleet.ToolCall, kind Kind, msg string) *Outcome {
	return &Outcome{Call: call, Result: agentfleet.ErrorResult(msg), IsError: true, Kind: kind}
}

// kindOf classifies an execution error.
func kindOf(err error) Kind {
	switch {
	case errors.Is(err, ErrTimeout):
		return Timeout
	case errors.Is(err, ErrWorkerLost):
		return WorkerLost
	case errors.Is(err, ErrNoResponders):
		return NoResponders
	default:
		return Failed
	}
}

// ResultError is an error that carries the error result a tool produced, so
// that an executor can report a failed call with the tool's own content and
// details rather than a bare message.
type ResultError struct {
	Result *agentfleet.ToolResult
}

func (e *ResultError) Error() string { return agentfleet.JoinText(e.Result.Content) }
