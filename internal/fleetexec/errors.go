package fleetexec

import (
	"errors"

	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// Err returns the tool client's error err as the pipeline knows it, with
// its text unchanged: a *toolrpc.ResultError becomes a
// *pipeline.ResultError with the same result, and an error that wraps
// toolrpc.ErrTimeout, ErrWorkerLost or ErrNoResponders also matches the
// pipeline's sentinel of that name under errors.Is (each of them, when it
// wraps several), so that the pipeline reports the outcome of that kind.
// Other errors, and nil, are returned as they are.
func Err(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := errors.AsType[*toolrpc.ResultError](err); ok {
		return &pipeline.ResultError{Result: re.Result}
	}
	for _, k := range kinds {
		if errors.Is(err, k.transport) {
			return &kindError{err: err}
		}
	}
	return err
}

// kinds pairs each error kind of the tool client with the pipeline's.
var kinds = [...]struct{ transport, pipeline error }{
	{toolrpc.ErrTimeout, pipeline.ErrTimeout},
	{toolrpc.ErrWorkerLost, pipeline.ErrWorkerLost},
	{toolrpc.ErrNoResponders, pipeline.ErrNoResponders},
}

// kindError is an error of the tool client that also is each of the
// pipeline's sentinels whose counterpart it wraps; it reads and unwraps as
// the client's error.
type kindError struct{ err error }

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

func (e *kindError) Is(target error) bool {
	for _, k := range kinds {
		if target == k.pipeline {
			return errors.Is(e.err, k.transport)
		}
	}
	return false
}
