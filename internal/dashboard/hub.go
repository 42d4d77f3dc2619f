package dashboard

import (
	"sync"
	"sync/atomic"

	"github.com/agentfleet/agentfleet/internal/bus/events"
)

// hub fans the feed's events out to the pages: one subscription for all of
// them, a buffer per page bounded in events and in bytes, and a page whose
// buffer is full is dropped rather than allowed to hold the others (or the
// NATS client) back, or the process's memory.
type hub struct {
	mu      sync.Mutex
	clients map[*client]struct{}
	// last is the stream sequence of the last event fanned out (or, before
	// the first, the one before it): a page that joins gets every event
	// after it from the hub, and replays up to it from the stream.
	last uint64
}

// client is one page's share of the hub.
type client struct {
	ch       chan events.FeedEvent
	gone     chan struct{} // closed when the hub dropped the page
	once     sync.Once
	maxBytes int64
	queued   atomic.Int64 // bytes of the events in ch
}

// took tells the hub the page took e from its buffer.
func (c *client) took(e events.FeedEvent) { c.queued.Add(-int64(len(e.Data))) }

func newHub() *hub { return &hub{clients: map[*client]struct{}{}} }

// join adds a page with room for size events of maxBytes bytes of data in
// all, and returns it with the sequence up to which the page must replay.
func (h *hub) join(size int, maxBytes int64) (*client, uint64) {
	c := &client{ch: make(chan events.FeedEvent, size), gone: make(chan struct{}), maxBytes: maxBytes}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[c] = struct{}{}
	return c, h.last
}

// start records the sequence before the first event the feed delivers.
// Events may already be fanned out by then: the hub keeps the greater.
func (h *hub) start(last uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = max(h.last, last)
}

// leave removes a page.
func (h *hub) leave(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
}

// publish hands e to every page, never blocking: a page with no room left
// is dropped.
func (h *hub) publish(e events.FeedEvent) {
	// The feed's buffers are reused by nothing, but copy anyway: the pages
	// read the data after this returns.
	e.Data = append([]byte(nil), e.Data...)
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Seq > h.last {
		h.last = e.Seq
	}
	n := int64(len(e.Data))
	for c := range h.clients {
		if c.queued.Load()+n > c.maxBytes {
			h.drop(c)
			continue
		}
		select {
		case c.ch <- e:
			c.queued.Add(n)
		default:
			h.drop(c)
		}
	}
}

// drop removes a page that has no room left and tells it so.
func (h *hub) drop(c *client) {
	delete(h.clients, c)
	c.once.Do(func() { close(c.gone) })
}
