package objref

import (
	"errors"
	"fmt"
)

// Defaults of Limits.
const (
	// DefaultThreshold is the size past which a result's block travels
	// by reference: well below NATS's default max payload of 1 MiB, so
	// that a frame of several such blocks still fits.
	DefaultThreshold = 256 << 10
	// DefaultMaxCall bounds the bytes one call may put in the bucket.
	DefaultMaxCall = 256 << 20
	// DefaultMaxSession bounds the bytes of the objects of one session.
	DefaultMaxSession = 1 << 30
)

// Limits bound what the calls put in the bucket; the zero value of a
// field means its default.
type Limits struct {
	// Threshold: a text or image block of a result larger than this many
	// bytes (its text, or its base64 data) is put in the bucket.
	Threshold int64
	// MaxCall bounds the bytes one call puts in the bucket, over all its
	// objects.
	MaxCall int64
	// MaxSession bounds the bytes of all the objects of one session.
	MaxSession int64
}

// WithDefaults returns l with its zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.Threshold <= 0 {
		l.Threshold = DefaultThreshold
	}
	if l.MaxCall <= 0 {
		l.MaxCall = DefaultMaxCall
	}
	if l.MaxSession <= 0 {
		l.MaxSession = DefaultMaxSession
	}
	return l
}

// ErrTooLarge is wrapped by the errors of an object over a limit.
var ErrTooLarge = errors.New("over the size limit")

// Room returns how many bytes the next object of a call may have, given
// what the call (callUsed) and the session (sessionUsed) already put in
// the bucket, and which limit that is; or an error naming the limit
// already reached.
func (l Limits) Room(callUsed, sessionUsed int64) (room int64, limit string, err error) {
	l = l.WithDefaults()
	callRoom, sessionRoom := l.MaxCall-callUsed, l.MaxSession-sessionUsed
	if sessionRoom <= 0 {
		return 0, "", fmt.Errorf("the session's objects hold %d bytes, at its limit of %d: %w", sessionUsed, l.MaxSession, ErrTooLarge)
	}
	if callRoom <= 0 {
		return 0, "", fmt.Errorf("the call put %d bytes in the object store, at its limit of %d: %w", callUsed, l.MaxCall, ErrTooLarge)
	}
	if sessionRoom < callRoom {
		return sessionRoom, fmt.Sprintf("the session's limit of %d bytes (%d used)", l.MaxSession, sessionUsed), nil
	}
	return callRoom, fmt.Sprintf("the per-call limit of %d bytes", l.MaxCall), nil
}

// Offloaded reports whether a block of n bytes travels by reference.
func (l Limits) Offloaded(n int) bool { return int64(n) > l.WithDefaults().Threshold }
