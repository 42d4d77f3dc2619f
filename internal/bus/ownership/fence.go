// Package ownership holds the fence token of session ownership and the
// decision whether a token still holds. A partition's owner hands out one
// Fence per session it serves; every write of the session's history and
// every acknowledgement of its input carries that Fence, and is refused
// unless the Checker (the partition table) says it still holds. The package
// is plain values and pure functions: the table that keeps the state is in
// package partition, the writers that carry the token in history and input.
package ownership

import (
	"errors"
	"fmt"
)

// Fence is the right to write one partition's sessions, as handed out when
// the partition was claimed: the owner's id and the epoch of the claim (the
// revision of the partition's key in the partitions bucket, which grows with
// every claim). A Fence whose epoch is 0 never holds.
type Fence struct {
	Partition int
	Owner     string
	Epoch     uint64
}

// String names the fence as errors and logs show it.
func (f Fence) String() string {
	return fmt.Sprintf("partition %d owner %q epoch %d", f.Partition, f.Owner, f.Epoch)
}

// Checker says whether a fence still holds: nil while it does; an error
// that can pass (the owner's lease is in doubt) while it may again; and a
// *FencedError once it never will.
type Checker interface {
	Check(f Fence) error
}

// CheckerFunc adapts a function to Checker.
type CheckerFunc func(f Fence) error

// Check implements Checker.
func (c CheckerFunc) Check(f Fence) error { return c(f) }

// Unfenced is the Checker of a store that no other process writes (tests, a
// single orchestrator without a partition table): every fence holds.
var Unfenced Checker = CheckerFunc(func(Fence) error { return nil })

// ErrFenced is what every *FencedError matches with errors.Is.
var ErrFenced = errors.New("ownership: fenced")

// FencedError says that a fence no longer holds: the partition was handed
// over, claimed again at a later epoch, or its owner's lease ended.
type FencedError struct {
	// Fence is the fence that was checked.
	Fence Fence
	// Owner and Epoch are the partition's current owner and claim epoch,
	// when known ("" and 0 otherwise).
	Owner string
	Epoch uint64
	// Reason says why, when it is more than a change of owner or epoch
	// (the lease ended).
	Reason error
}

// Error implements error.
func (e *FencedError) Error() string {
	msg := "ownership: the fence of " + e.Fence.String() + " no longer holds"
	if e.Owner != "" {
		msg += fmt.Sprintf(": the partition is owned by %q at epoch %d", e.Owner, e.Epoch)
	} else {
		msg += ": the partition is not owned here"
	}
	if e.Reason != nil {
		msg += ": " + e.Reason.Error()
	}
	return msg
}

// Unwrap returns ErrFenced and the reason, if any.
func (e *FencedError) Unwrap() []error {
	if e.Reason == nil {
		return []error{ErrFenced}
	}
	return []error{ErrFenced, e.Reason}
}
