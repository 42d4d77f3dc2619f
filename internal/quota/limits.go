// Package quota decides the fleet's shared model quota as pure functions:
// the limits of a model (requests and tokens per minute, concurrent
// requests), the state of its token buckets as every orchestrator stores
// it, whether a call may go now (Take) or how long it waits and why, what
// a call's end gives back (Release), a provider's pause (Pause), and the
// order in which one orchestrator's waiting calls are offered (Queue).
// It does no I/O and reads no clock: the runner (package bus/limiter)
// reads and writes the state with compare-and-set and passes the time.
package quota

import (
	"fmt"
	"math"
	"time"
)

// Limits are the limits of one model of an endpoint, shared by the whole
// fleet. Zero fields set no bound.
type Limits struct {
	// RPM bounds the requests per minute. It is enforced smoothly, as
	// RPM/60 per second: a token bucket that refills at that rate and
	// holds at most Burst requests.
	RPM int `yaml:"rpm" json:"rpm"`
	// TPM bounds the tokens per minute, input and output, likewise as
	// TPM/60 per second, charged by each request's estimate and corrected
	// by the usage its response reports.
	TPM int `yaml:"tpm" json:"tpm"`
	// Concurrent bounds the requests in flight across the fleet.
	Concurrent int `yaml:"concurrent" json:"concurrent"`
	// Burst is the requests that may go at once after a quiet spell, the
	// slack above the per-second share. Optional; default a quarter of a
	// second's share, at least 1.
	Burst int `yaml:"burst" json:"burst"`
}

// MaxLimit bounds each field of Limits.
const MaxLimit = 1 << 40

// Check reports the first field of l that is negative or absurdly large,
// naming it.
func (l Limits) Check() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"rpm", l.RPM}, {"tpm", l.TPM}, {"concurrent", l.Concurrent}, {"burst", l.Burst}} {
		if f.v < 0 {
			return fmt.Errorf("limit %s %d is negative", f.name, f.v)
		}
		if f.v > MaxLimit {
			return fmt.Errorf("limit %s %d is above %d", f.name, f.v, int64(MaxLimit))
		}
	}
	if l.Burst > 0 && l.RPM == 0 {
		return fmt.Errorf("limit burst %d needs an rpm", l.Burst)
	}
	if l.RPM > 0 && l.Burst > l.RPM {
		return fmt.Errorf("limit burst %d is above rpm %d", l.Burst, l.RPM)
	}
	return nil
}

// Zero reports whether l sets no bound at all.
func (l Limits) Zero() bool { return l.RPM == 0 && l.TPM == 0 && l.Concurrent == 0 }

// reqRate is the request bucket's refill, per nanosecond.
func (l Limits) reqRate() float64 { return float64(l.RPM) / float64(time.Minute) }

// tokRate is the token bucket's refill, per nanosecond.
func (l Limits) tokRate() float64 { return float64(l.TPM) / float64(time.Minute) }

// ReqCap is the request bucket's capacity: Burst, by default a quarter of
// a second's share of RPM, at least 1.
func (l Limits) ReqCap() float64 {
	if l.Burst > 0 {
		return float64(l.Burst)
	}
	return math.Max(1, math.Ceil(float64(l.RPM)/60/4))
}

// TokCap is the token bucket's capacity: ten seconds' share of TPM, so
// that a request larger than one second's share can go at all.
func (l Limits) TokCap() float64 { return math.Max(1, float64(l.TPM)/6) }
