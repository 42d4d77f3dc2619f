package toolrpc

import (
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// Room kept in a call record's frame buffer: progress and heartbeats are
// dropped once progressRoom frames wait in it undelivered, so that the ack
// and the final frame of a call always find a place, without the routing of
// every other call's frames waiting for a slow one.
const (
	progressRoom = 32
	frameRoom    = progressRoom + 4
)

// inflight is the record of one attempt of a call: the frames routed to it
// and the attempt's one timer. Records are pooled. One is taken for an
// attempt and released by whoever ends it last (the attempt, or cancelLate
// when the attempt handed it over), once it is out of the routing table:
// frames are put in it only under ToolClient.mu, while it is in the table,
// so that none reaches the record once it is released.
type inflight struct {
	seq    uint64 // its key in ToolClient.calls while registered
	reply  string // the inbox of that send
	frames chan delivery
	timer  *time.Timer // stopped when the record is idle
}

var inflightPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &inflight{frames: make(chan delivery, frameRoom), timer: t}
}}

// newInflight takes a record from the pool.
func newInflight() *inflight { return inflightPool.Get().(*inflight) }

// release stops the record's timer, drops the frames left in it and puts
// it back in the pool. The record must be unregistered.
func (call *inflight) release() {
	call.timer.Stop() // since Go 1.23, no stale tick is received after Stop
	call.drain()
	call.seq, call.reply = 0, ""
	inflightPool.Put(call)
}

// drain drops the frames waiting in the record.
func (call *inflight) drain() {
	for {
		select {
		case <-call.frames:
		default:
			return
		}
	}
}

// arm sets the timer to fire at the earlier of deadline (if not zero) and
// at.
func (call *inflight) arm(deadline, at time.Time) {
	if !deadline.IsZero() && deadline.Before(at) {
		at = deadline
	}
	call.timer.Reset(time.Until(at))
}

// offer puts d in the record without blocking: progress and heartbeats
// only while fewer than progressRoom frames wait, other frames while there
// is room. It is called under ToolClient.mu.
func (call *inflight) offer(d delivery) {
	if d.f != nil && (d.f.T == wire.FrameHeartbeat || d.f.T == wire.FrameProgress) && len(call.frames) >= progressRoom {
		return
	}
	select {
	case call.frames <- d:
	default: // only a worker sending frames after its final one gets here
	}
}
