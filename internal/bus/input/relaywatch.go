package input

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// relayIdle is how long the watcher of relayed stores waits for another
// before it ends, so that a steady flow of asks keeps one goroutine.
const relayIdle = time.Second

// relayWait is a relayed message whose store the stream has not yet
// acknowledged.
type relayWait struct {
	in  *Input // told of a failure (relayFailed)
	f   jetstream.PubAckFuture
	m   *nats.Msg
	msg *Inbound
	// h is the relayed message's headers; first says they hold the
	// condition of expectFirst.
	h     nats.Header
	first bool
	by    time.Time // when it is given up
}

// relayWatch waits for the acknowledgements of relayed messages with one
// goroutine and one timer, instead of one of each per message: it takes
// them in the order they were published, which is the order the stream
// acknowledges them in, and gives each up at its own deadline. A failure
// behind a message still unacknowledged is reported once that one is
// settled, within relayTimeout of its publication. The goroutine runs
// while there are stores to wait for, and relayIdle after.
type relayWatch struct {
	mu      sync.Mutex
	queue   []relayWait
	running bool
	wake    chan struct{} // made by the first add
}

// add waits for w's acknowledgement, and tells w.in if the store fails or
// is not acknowledged by w.by.
func (rw *relayWatch) add(w relayWait) {
	rw.mu.Lock()
	rw.queue = append(rw.queue, w)
	start := !rw.running
	rw.running = true
	if rw.wake == nil {
		rw.wake = make(chan struct{}, 1)
	}
	wake := rw.wake
	rw.mu.Unlock()
	if start {
		go rw.run()
		return
	}
	select {
	case wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// next takes the oldest store waited for, and false when there is none.
func (rw *relayWatch) next() (relayWait, bool) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.queue) == 0 {
		return relayWait{}, false
	}
	w := rw.queue[0]
	rw.queue[0] = relayWait{}
	rw.queue = rw.queue[1:]
	if len(rw.queue) == 0 {
		rw.queue = nil // let the backing array go
	}
	return w, true
}

// stopIfIdle ends the watcher's turn if nothing was added since next found
// the queue empty.
func (rw *relayWatch) stopIfIdle() bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.queue) > 0 {
		return false
	}
	rw.running = false
	return true
}

func (rw *relayWatch) run() {
	t := time.NewTimer(relayIdle)
	defer t.Stop()
	for {
		w, ok := rw.next()
		if !ok {
			t.Reset(relayIdle)
			select {
			case <-rw.wake:
			case <-t.C:
				if rw.stopIfIdle() {
					return
				}
			}
			continue
		}
		select {
		case <-w.f.Ok():
			continue
		case err := <-w.f.Err():
			w.failed(err)
			continue
		default:
		}
		t.Reset(time.Until(w.by))
		select {
		case <-w.f.Ok():
		case err := <-w.f.Err():
			w.failed(err)
		case <-t.C:
			w.failed(fmt.Errorf("no acknowledgement from the input stream in %v", relayTimeout))
		}
	}
}

// failed reports that w was not stored; one refused because its session
// had other input waiting is published again without the condition.
func (w relayWait) failed(err error) {
	if w.first && notFirst(err) {
		h := maps.Clone(w.h)
		delete(h, headerExpectedLastSubjSeq)
		delete(h, headerExpectedLastSubjSeqSubj)
		w.in.publishRelay(w.m, w.msg, h, false)
		return
	}
	w.in.relayFailed(w.m, w.msg, err)
}
