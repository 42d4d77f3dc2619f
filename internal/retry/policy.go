// Package retry holds the one backoff policy and retry loop of the
// program: a Policy says how long to wait after each failed attempt, and Do
// calls an operation until it succeeds, gives up, or its context ends. It
// imports only the standard library.
package retry

import (
	"math"
	"math/rand/v2"
	"time"
)

// Jitter says how the wait after a failure is drawn from its bound.
type Jitter int

const (
	// FullJitter draws the wait uniformly from [0, bound]. It is the zero
	// value, and so the default.
	FullJitter Jitter = iota
	// EqualJitter draws the wait uniformly from [bound/2, bound].
	EqualJitter
	// NoJitter waits the bound itself.
	NoJitter
)

// Policy is a backoff: the bound of the wait after failed attempt n (from
// 1) is Base·Multiplier^(n-1), capped at Max, and the wait is drawn from
// that bound by Jitter. The zero value retries at once, without limit.
type Policy struct {
	// Base is the bound of the wait after the first failure. Optional;
	// default 0 (no wait).
	Base time.Duration
	// Max caps the bound. Optional; default no cap.
	Max time.Duration
	// Multiplier grows the bound after every failure. Optional; default 2.
	// 1 keeps it constant.
	Multiplier float64
	// Jitter draws the wait from the bound. Optional; default FullJitter.
	Jitter Jitter
	// MaxAttempts bounds the attempts of Do, the first included. Optional;
	// default 0, meaning until the operation succeeds, returns a
	// Permanent error, or the context ends.
	MaxAttempts int
	// OnRetry, if set, is called by Do after failed attempt n and before
	// it waits wait to try again, with the attempt's error. Optional.
	OnRetry func(n int, err error, wait time.Duration)
}

// Bound returns the bound of the wait after failed attempt n (from 1):
// Base·Multiplier^(n-1), capped at Max.
func (p Policy) Bound(n int) time.Duration {
	if p.Base <= 0 {
		return 0
	}
	m := p.Multiplier
	if m <= 0 {
		m = 2
	}
	limit := time.Duration(math.MaxInt64)
	if p.Max > 0 {
		limit = p.Max
	}
	b := float64(p.Base)
	for i := 1; i < n && b < float64(limit); i++ {
		b *= m
	}
	if b >= float64(limit) {
		return limit
	}
	return time.Duration(b)
}

// Delay returns the wait after failed attempt n (from 1): a duration drawn
// from Bound(n) by the policy's Jitter.
func (p Policy) Delay(n int) time.Duration {
	bound := p.Bound(n)
	if bound <= 0 {
		return 0
	}
	switch p.Jitter {
	case NoJitter:
		return bound
	case EqualJitter:
		return bound/2 + rand.N(bound/2+1)
	default:
		return rand.N(bound + 1)
	}
}
