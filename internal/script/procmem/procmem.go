// Package procmem holds the memory budget that the script calls of one
// process share, each reserving its own budget from it while it runs. It
// imports only the standard library.
package procmem

import (
	"context"
	"fmt"
	"sync"
)

// DefaultProcessMemory is the default of the memory budget that the script
// calls of one process share.
const DefaultProcessMemory = 256 << 20

// ProcessMemory is a memory budget shared by every script call of a
// process: each call reserves its own budget (script.Env.MaxMemory) from it before
// it starts and gives it back when it ends, so that calls running at once
// can never together be granted more than the process's budget, however
// many the worker's concurrency lets in. A call's budget bounds what it may
// allocate in total, so the sum of the reservations bounds what the calls
// running at once may hold. It is safe for concurrent use.
type ProcessMemory struct {
	total int64

	mu       sync.Mutex
	reserved int64
	peak     int64
	// freed is closed, and renewed, whenever a reservation ends.
	freed chan struct{}
}

// NewProcessMemory returns a budget of total bytes (DefaultProcessMemory
// when total ≤ 0).
func NewProcessMemory(total int64) *ProcessMemory {
	if total <= 0 {
		total = DefaultProcessMemory
	}
	return &ProcessMemory{total: total, freed: make(chan struct{})}
}

// Total returns the budget in bytes.
func (m *ProcessMemory) Total() int64 { return m.total }

// Reserved returns the bytes reserved by the calls running now.
func (m *ProcessMemory) Reserved() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reserved
}

// Peak returns the most bytes ever reserved at once.
func (m *ProcessMemory) Peak() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak
}

// Calls returns how many calls of budget perCall fit at once.
func (m *ProcessMemory) Calls(perCall int64) int {
	if perCall <= 0 {
		return 0
	}
	return int(m.total / perCall)
}

// ErrProcessMemoryFull is the error of a reservation that does not fit now.
type ErrProcessMemoryFull struct {
	Want, Reserved, Total int64
}

func (e *ErrProcessMemoryFull) Error() string {
	return fmt.Sprintf("the scripts' process memory budget of %s is full: %s reserved by the calls running, and a call needs %s",
		FormatBytes(e.Total), FormatBytes(e.Reserved), FormatBytes(e.Want))
}

// CheckFits fails when a call's budget of perCall bytes can never fit in
// the process budget: a configuration error, to report at the start.
func (m *ProcessMemory) CheckFits(perCall int64) error {
	if perCall > m.total {
		return fmt.Errorf("the memory budget of one script call, %s, is larger than the process budget of all script calls, %s", FormatBytes(perCall), FormatBytes(m.total))
	}
	return nil
}

// reservationFits is the decision of a reservation: n more bytes fit when the
// reservations stay within total.
func reservationFits(total, reserved, n int64) bool {
	return n >= 0 && n <= total-reserved
}

// TryReserve reserves n bytes if they fit now, and returns the function
// that gives them back (once; later calls do nothing); otherwise it fails
// with an *ErrProcessMemoryFull at once.
func (m *ProcessMemory) TryReserve(n int64) (release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !reservationFits(m.total, m.reserved, n) {
		return nil, &ErrProcessMemoryFull{Want: n, Reserved: m.reserved, Total: m.total}
	}
	m.reserved += n
	m.peak = max(m.peak, m.reserved)
	var once sync.Once
	return func() { once.Do(func() { m.release(n) }) }, nil
}

// Reserve reserves n bytes, waiting for running calls to give theirs back
// until ctx ends; what does not fit the budget at all fails at once.
func (m *ProcessMemory) Reserve(ctx context.Context, n int64) (release func(), err error) {
	if err := m.CheckFits(n); err != nil {
		return nil, err
	}
	for {
		m.mu.Lock()
		freed := m.freed
		m.mu.Unlock()
		release, err := m.TryReserve(n)
		if err == nil {
			return release, nil
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w; waited until %w", err, context.Cause(ctx))
		}
	}
}

func (m *ProcessMemory) release(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reserved -= n
	close(m.freed)
	m.freed = make(chan struct{})
}

// FormatBytes renders n bytes for a message: in MiB or KiB when it is a
// whole number of them, else in bytes.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
