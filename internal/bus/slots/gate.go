package slots

import (
	"container/list"
	"context"
	"sync"
)

// Gate admits at most limit calls of one tool at once, the others waiting in
// arrival order. It keeps an orchestrator from sending a full fleet more
// calls than it has slots: those would only be refused as busy and sent
// again, in no order, while the calls behind them wait longer and longer.
type Gate struct {
	mu      sync.Mutex
	limit   int // at most this many admitted at once; 0: no limit
	running int
	waiting list.List // of chan struct{}, closed when admitted
}

// NewGate returns a gate of limit (0: no limit).
func NewGate(limit int) *Gate { return &Gate{limit: max(limit, 0)} }

// Acquire waits for a slot, in arrival order, until ctx ends. A nil error
// means the caller holds a slot and must Release it.
func (g *Gate) Acquire(ctx context.Context) error {
	g.mu.Lock()
	if g.waiting.Len() == 0 && g.free() {
		g.running++
		g.mu.Unlock()
		return nil
	}
	admitted := make(chan struct{})
	e := g.waiting.PushBack(admitted)
	g.mu.Unlock()
	select {
	case <-admitted:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		select {
		case <-admitted:
			// Admitted as ctx ended: pass the slot on to the next in line.
			g.running--
			g.admit()
		default:
			g.waiting.Remove(e)
		}
		g.mu.Unlock()
		return ctx.Err()
	}
}

// TryAcquire takes a slot if one is free and no call waits for one.
func (g *Gate) TryAcquire() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting.Len() == 0 && g.free() {
		g.running++
		return true
	}
	return false
}

// Release gives a slot back and admits the next call waiting.
func (g *Gate) Release() {
	g.mu.Lock()
	g.running--
	g.admit()
	g.mu.Unlock()
}

// SetLimit changes the limit (0: none), admitting waiting calls if it grew.
// Calls already admitted keep their slots when it shrinks.
func (g *Gate) SetLimit(n int) {
	g.mu.Lock()
	g.limit = max(n, 0)
	g.admit()
	g.mu.Unlock()
}

// State returns the calls admitted and waiting, and the limit.
func (g *Gate) State() (running, waiting, limit int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, g.waiting.Len(), g.limit
}

func (g *Gate) free() bool { return g.limit <= 0 || g.running < g.limit }

// admit lets waiting calls in while there is room; under mu.
func (g *Gate) admit() {
	for g.waiting.Len() > 0 && g.free() {
		close(g.waiting.Remove(g.waiting.Front()).(chan struct{}))
		g.running++
	}
}
