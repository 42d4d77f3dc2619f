package netproxy

import (
	"fmt"
	"time"
)

// Mode is what a proxy does to the bytes it carries. The zero value passes
// them at once.
type Mode struct {
	// Blackhole holds every byte, in both directions, until the mode
	// changes; the connections stay open.
	Blackhole bool
	// Latency is added to every chunk in each direction, plus or minus a
	// uniform draw of up to Jitter; a chunk is never delivered before the
	// one read before it.
	Latency, Jitter time.Duration
}

// Validate reports a mode that cannot be carried out, naming the field.
func (m Mode) Validate() error {
	switch {
	case m.Latency < 0:
		return fmt.Errorf("netproxy: latency %v: want 0 or more", m.Latency)
	case m.Jitter < 0:
		return fmt.Errorf("netproxy: jitter %v: want 0 or more", m.Jitter)
	case m.Jitter > m.Latency:
		return fmt.Errorf("netproxy: jitter %v is more than the latency %v: a delay cannot be negative", m.Jitter, m.Latency)
	}
	return nil
}

// String names the mode as the harness logs it.
func (m Mode) String() string {
	switch {
	case m.Blackhole:
		return "blackhole"
	case m.Latency > 0:
		return fmt.Sprintf("latency %v±%v", m.Latency, m.Jitter)
	}
	return "pass"
}

// Delay is the delay of a chunk read under m, for a uniform draw u in
// [0, 1): Latency - Jitter + 2·Jitter·u.
func Delay(m Mode, u float64) time.Duration {
	if m.Latency <= 0 {
		return 0
	}
	u = min(max(u, 0), 1)
	return m.Latency - m.Jitter + time.Duration(2*float64(m.Jitter)*u)
}

// Due is when a chunk read at arrived with the given delay is delivered:
// after its delay, and never before the chunk delivered before it
// (prevDue), so that a stream keeps its order whatever the draws.
func Due(arrived time.Time, delay time.Duration, prevDue time.Time) time.Time {
	due := arrived.Add(delay)
	if due.Before(prevDue) {
		return prevDue
	}
	return due
}
