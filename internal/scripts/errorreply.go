package scripts

import (
	"encoding/json"
	"errors"

	"github.com/agentfleet/agentfleet/internal/script"
)

// ErrorReply is the body of a dry run's reply (and the error of a call run
// in a child process): no error, or its text and what kind of error it is,
// so that the requester can tell a note from a fault.
type ErrorReply struct {
	// Error is the text of the dry run's error, empty when it ran through.
	Error string `json:"error,omitempty"`
	// Incomplete marks a note (script.ErrDryRunIncomplete).
	Incomplete bool `json:"incomplete,omitempty"`
	// Kind, Tool and Pos are those of a *script.Error.
	Kind string `json:"kind,omitempty"`
	Tool string `json:"tool,omitempty"`
	Pos  string `json:"pos,omitempty"`
	Msg  string `json:"msg,omitempty"`
}

// EncodeError encodes err as an ErrorReply; nil as the reply of a dry run
// that ran through.
func EncodeError(err error) []byte {
	r := NewErrorReply(err)
	b, _ := json.Marshal(r) // strings and bools only
	return b
}

// NewErrorReply describes err, nil or not, as an ErrorReply.
func NewErrorReply(err error) *ErrorReply {
	var r ErrorReply
	if err != nil {
		r.Error = err.Error()
		r.Incomplete = errors.Is(err, script.ErrDryRunIncomplete)
		var se *script.Error
		if !r.Incomplete && errors.As(err, &se) && se.Error() == r.Error {
			r.Kind, r.Tool, r.Pos, r.Msg = string(se.Kind), se.Tool, se.Pos, se.Msg
		}
	}
	return &r
}

// remoteError is a dry run's error as the worker reported it.
type remoteError struct {
	text       string
	incomplete bool
}

func (e *remoteError) Error() string { return e.text }

// Is makes a note match script.ErrDryRunIncomplete, as it did on the
// worker.
func (e *remoteError) Is(target error) bool {
	return e.incomplete && target == script.ErrDryRunIncomplete
}

// Err returns the error r describes, nil when it describes none: a
// *script.Error when it has its kind, else an error with its text that
// matches script.ErrDryRunIncomplete when it was a note.
func (r *ErrorReply) Err() error {
	switch {
	case r == nil || r.Error == "":
		return nil
	case r.Kind != "":
		return &script.Error{Tool: r.Tool, Kind: script.ErrorKind(r.Kind), Pos: r.Pos, Msg: r.Msg}
	}
	return &remoteError{text: r.Error, incomplete: r.Incomplete}
}
