package toolrpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// Recovery is what an orchestrator that takes over a run does about a call
// of a tool that is not idempotent, found without a result.
type Recovery int

// The recoveries.
const (
	// RecoveryUnknown: no record, a record without its body, or the
	// marker of a worker that is gone: the outcome is unknown, and the
	// call is not run again.
	RecoveryUnknown Recovery = iota
	// RecoveryUse: the record holds the call's final frame; it is the
	// call's result.
	RecoveryUse
	// RecoveryWait: a worker the fleet still knows runs the call; its
	// record is awaited.
	RecoveryWait
)

func (r Recovery) String() string {
	switch r {
	case RecoveryUse:
		return "use"
	case RecoveryWait:
		return "wait"
	}
	return "unknown"
}

// DecideRecovery decides what to do about a call given its record (nil:
// none) and whether the worker the record names is still in the fleet.
func DecideRecovery(rec *OutcomeRecord, alive bool) Recovery {
	switch {
	case rec == nil:
		return RecoveryUnknown
	case rec.State == OutcomeDone && !rec.Omitted && len(rec.Frame) > 0:
		return RecoveryUse
	case rec.State == OutcomeStarted && alive:
		return RecoveryWait
	}
	return RecoveryUnknown
}

// Recovered is the recorded outcome of a call.
type Recovered struct {
	// Result and IsError are the call's result as its worker sent it;
	// Result is nil when Omitted.
	Result  *agentfleet.ToolResult
	IsError bool
	// Worker ran the call (name/id).
	Worker string
	// Omitted: the call finished, with a result frame of Size bytes, too
	// large to record; what it returned is unknown.
	Omitted bool
	Size    int
}

// ErrOutcomeUnknown wraps the reasons Recover finds no outcome: no record,
// the worker that began the call left the fleet, or ctx ended first.
var ErrOutcomeUnknown = errors.New("outcome unknown")

// recoverPoll is how often Recover asks, while it waits, whether the
// worker running the call is still in the fleet.
const recoverPoll = 250 * time.Millisecond

// Recover returns the recorded outcome of the call under key (OutcomeKey).
// A call still running on a worker that alive says is in the fleet is
// waited for, until its record is final, the worker leaves, or ctx ends.
// A call that finished with a result too large to record is returned with
// Omitted set. Every other case is an error wrapping ErrOutcomeUnknown that
// says why.
func (o *Outcomes) Recover(ctx context.Context, key string, alive func(workerID string) bool) (*Recovered, error) {
	rec, err := o.Get(ctx, key)
	if errors.Is(err, ErrNoOutcome) {
		return nil, fmt.Errorf("%w: no worker recorded the call", ErrOutcomeUnknown)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	switch DecideRecovery(rec, rec != nil && alive(rec.WorkerID)) {
	case RecoveryUse:
		return recovered(key, rec)
	case RecoveryWait:
		return o.await(ctx, key, rec, alive)
	}
	return o.unknown(ctx, key, rec)
}

// await watches key until the record of the call is final, the worker of
// the last record leaves the fleet, or ctx ends.
func (o *Outcomes) await(ctx context.Context, key string, rec *OutcomeRecord, alive func(string) bool) (*Recovered, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := o.kv.Watch(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("%w: watch %s: %w", ErrOutcomeUnknown, key, err)
	}
	defer w.Stop()
	tick := time.NewTicker(recoverPoll)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("%w: watch of %s ended", ErrOutcomeUnknown, key)
			}
			if e == nil {
				continue // the current value has been delivered
			}
			if r, err := decodeRecord(key, e.Value()); err == nil {
				rec = r
			} else if len(e.Value()) == 0 {
				rec = nil // deleted or expired
			} else {
				return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
			}
		case <-tick.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: worker %s still ran the call when the wait for it ended (%w)", ErrOutcomeUnknown, rec.Worker, context.Cause(ctx))
		}
		switch DecideRecovery(rec, rec != nil && alive(rec.WorkerID)) {
		case RecoveryUse:
			return recovered(key, rec)
		case RecoveryUnknown:
			return o.unknown(ctx, key, rec)
		}
	}
}

// recovered decodes the final frame of a record.
func recovered(key string, rec *OutcomeRecord) (*Recovered, error) {
	f, err := wire.DecodeFrame(rec.Frame)
	if err != nil {
		return nil, fmt.Errorf("%w: record %s: %w", ErrOutcomeUnknown, key, err)
	}
	if f.T != wire.FrameResult || f.Result == nil {
		return nil, fmt.Errorf("%w: record %s holds a %q frame, not a result", ErrOutcomeUnknown, key, f.T)
	}
	return &Recovered{Result: f.Result, IsError: f.IsError, Worker: rec.Worker, Size: rec.Size}, nil
}

// unknown says why a record gives no outcome; a finished call whose result
// was too large to record is returned as Omitted. The marker of a worker
// that left is read once more: the worker records the end of a call before
// it leaves, and that record may have been on its way.
func (o *Outcomes) unknown(ctx context.Context, key string, rec *OutcomeRecord) (*Recovered, error) {
	if rec != nil && rec.State == OutcomeStarted {
		if last, err := o.Get(ctx, key); err == nil && last.State == OutcomeDone {
			rec = last
			if DecideRecovery(rec, false) == RecoveryUse {
				return recovered(key, rec)
			}
		}
	}
	switch {
	case rec == nil:
		return nil, fmt.Errorf("%w: the record of the call expired", ErrOutcomeUnknown)
	case rec.State == OutcomeDone && rec.Omitted:
		return &Recovered{Worker: rec.Worker, Omitted: true, Size: rec.Size}, nil
	case rec.State == OutcomeDone:
		return nil, fmt.Errorf("%w: record %s of worker %s holds no frame", ErrOutcomeUnknown, key, rec.Worker)
	}
	return nil, fmt.Errorf("%w: worker %s began the call and left the fleet before it recorded an outcome", ErrOutcomeUnknown, rec.Worker)
}
