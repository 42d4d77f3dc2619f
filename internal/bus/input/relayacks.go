package input

import (
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/puback"
	"github.com/nats-io/nats.go"
)

// relayTimeout bounds the store of one relayed message.
const relayTimeout = 5 * time.Second

// Bounds of the relayed stores waiting for their acknowledgement: past
// maxRelaysWaiting a relay waits up to relayStall for one to be settled
// (as jetstream's asynchronous publish stalls), then fails.
const (
	maxRelaysWaiting = 4096
	relayStall       = 200 * time.Millisecond
)

// relayWait is a relayed message whose store the stream has not yet
// acknowledged.
type relayWait struct {
	m   *nats.Msg
	msg *Inbound
	// h is the relayed message's headers; first says they hold the
	// condition of expectFirst.
	h     nats.Header
	first bool
}

// relayDeadline is when the store of relayed message id is given up.
type relayDeadline struct {
	id uint64
	by time.Time
}

// relayAcks takes the acknowledgements of an input's relayed stores on an
// inbox of its own: each store is published with the reply subject
// <inbox>.<id>, and its answer settles it by that id. A failure is told to
// the input (relayFailed), or, for an ask refused because its session had
// other input waiting, the ask is published again without the condition.
// One goroutine, running while stores wait, gives up each at its deadline,
// relayTimeout after its publication; deadlines come in publication order,
// so one timer serves them all. Against jetstream's asynchronous publish,
// which it replaces here, a store costs no future, channels or JSON
// decoding of the answer (puback reads the server's template answer).
type relayAcks struct {
	in      *Input
	once    sync.Once
	err     error
	prefix  string        // the inbox, with its trailing dot
	stream  string        // the input stream's name, in its answers
	timeout time.Duration // default relayTimeout
	limit   int           // default maxRelaysWaiting

	mu       sync.Mutex
	next     uint64
	waiting  map[uint64]relayWait
	queue    []relayDeadline // publication order
	running  bool
	wake     chan struct{}
	freed    chan struct{} // closed when a store is settled while the bound is reached
	stalling bool
}

func (ra *relayAcks) start() error {
	ra.once.Do(func() {
		if ra.timeout == 0 {
			ra.timeout = relayTimeout
		}
		if ra.limit == 0 {
			ra.limit = maxRelaysWaiting
		}
		ra.stream = ra.in.subjects.StreamName("INPUT")
		ra.waiting = map[uint64]relayWait{}
		ra.wake = make(chan struct{}, 1)
		ra.prefix = ra.in.nc.NewRespInbox() + "."
		// Not among the input's subscriptions: the stores of messages
		// received before Stop are still settled after it.
		_, ra.err = ra.in.nc.Subscribe(ra.prefix+"*", ra.answer)
	})
	return ra.err
}

// publish stores relayed message w under subject, and settles it when the
// stream answers or its deadline passes.
func (ra *relayAcks) publish(subject string, w relayWait) {
	if err := ra.start(); err != nil {
		ra.in.relayFailed(w.m, w.msg, fmt.Errorf("subscribe to the input stream's acknowledgements: %w", err))
		return
	}
	id, err := ra.add(w)
	if err != nil {
		ra.in.relayFailed(w.m, w.msg, err)
		return
	}
	err = ra.in.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: ra.prefix + strconv.FormatUint(id, 36), Header: w.h, Data: w.m.Data})
	if err != nil {
		if w, ok := ra.take(id); ok {
			ra.in.relayFailed(w.m, w.msg, err)
		}
	}
}

// add registers w, waiting up to relayStall while ra.limit stores
// wait already, and returns its id.
func (ra *relayAcks) add(w relayWait) (uint64, error) {
	ra.mu.Lock()
	if len(ra.waiting) >= ra.limit {
		t := time.NewTimer(relayStall)
		defer t.Stop()
		for len(ra.waiting) >= ra.limit {
			if ra.freed == nil {
				ra.freed = make(chan struct{})
			}
			freed := ra.freed
			ra.mu.Unlock()
			select {
			case <-freed:
			case <-t.C:
				return 0, fmt.Errorf("%d relayed messages wait for the input stream's acknowledgement", ra.limit)
			}
			ra.mu.Lock()
		}
	}
	defer ra.mu.Unlock()
	ra.next++
	id := ra.next
	ra.waiting[id] = w
	ra.queue = append(ra.queue, relayDeadline{id: id, by: time.Now().Add(ra.timeout)})
	if !ra.running {
		ra.running = true
		go ra.watch()
	}
	return id, nil
}

// take removes the store of id from those waiting; false if it is settled
// already.
func (ra *relayAcks) take(id uint64) (relayWait, bool) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	w, ok := ra.waiting[id]
	if !ok {
		return relayWait{}, false
	}
	delete(ra.waiting, id)
	// Stores are mostly settled in order: drop the settled ones at the
	// head, so that the queue holds only what waits.
	for len(ra.queue) > 0 {
		if _, waiting := ra.waiting[ra.queue[0].id]; waiting {
			break
		}
		ra.queue[0] = relayDeadline{}
		ra.queue = ra.queue[1:]
	}
	if ra.freed != nil {
		close(ra.freed)
		ra.freed = nil
	}
	return w, true
}

// answer settles the store the stream answered with m.
func (ra *relayAcks) answer(m *nats.Msg) {
	id, err := strconv.ParseUint(m.Subject[len(ra.prefix):], 36, 64)
	if err != nil {
		return // not an id of ours
	}
	w, ok := ra.take(id)
	if !ok {
		return // settled already: a late or repeated answer
	}
	if _, err := puback.Parse(m, ra.stream); err != nil {
		ra.failed(w, err)
	}
}

// watch gives up the stores whose deadline passes, and ends when none waits.
func (ra *relayAcks) watch() {
	t := time.NewTimer(ra.timeout)
	defer t.Stop()
	for {
		ra.mu.Lock()
		now := time.Now()
		var late []relayWait
		for len(ra.queue) > 0 {
			d := ra.queue[0]
			w, waiting := ra.waiting[d.id]
			if waiting && d.by.After(now) {
				break
			}
			ra.queue[0] = relayDeadline{}
			ra.queue = ra.queue[1:]
			if waiting {
				delete(ra.waiting, d.id)
				late = append(late, w)
			}
		}
		if len(ra.queue) == 0 {
			ra.queue = nil // let the backing array go
			ra.running = false
			if ra.freed != nil && len(late) > 0 {
				close(ra.freed)
				ra.freed = nil
			}
			ra.mu.Unlock()
			ra.giveUp(late)
			return
		}
		next := ra.queue[0].by
		if ra.freed != nil && len(late) > 0 {
			close(ra.freed)
			ra.freed = nil
		}
		ra.mu.Unlock()
		ra.giveUp(late)
		t.Reset(time.Until(next))
		<-t.C
	}
}

func (ra *relayAcks) giveUp(late []relayWait) {
	for _, w := range late {
		ra.failed(w, fmt.Errorf("no acknowledgement from the input stream in %v", ra.timeout))
	}
}

// failed reports that w was not stored; one refused because its session
// had other input waiting is published again without the condition.
func (ra *relayAcks) failed(w relayWait, err error) {
	if w.first && notFirst(err) {
		h := maps.Clone(w.h)
		delete(h, headerExpectedLastSubjSeq)
		delete(h, headerExpectedLastSubjSeqSubj)
		ra.in.publishRelay(w.m, w.msg, h, false)
		return
	}
	ra.in.relayFailed(w.m, w.msg, err)
}
