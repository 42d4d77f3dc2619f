package dashboard

import (
	"bytes"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/events"
)

// TestHubDropsASlowPage fills one page's buffer: the next event drops that
// page (its gone channel closes) without blocking the publisher, while a
// page with room gets every event; the sequence a page that joins later
// replays up to is the last one handed out.
func TestHubDropsASlowPage(t *testing.T) {
	h := newHub()
	h.start(10)
	slow, upTo := h.join(2, 1<<20)
	if upTo != 10 {
		t.Errorf("a page joining before any event replays up to %d, want 10", upTo)
	}
	fast, _ := h.join(8, 1<<20)
	for seq := uint64(11); seq <= 13; seq++ {
		h.publish(events.FeedEvent{Subject: "agent.events.a.s.turn.start", Data: []byte(`{}`), Seq: seq})
	}
	select {
	case <-slow.gone:
	default:
		t.Fatal("the page with a full buffer was not dropped")
	}
	select {
	case <-fast.gone:
		t.Fatal("the page with room was dropped")
	default:
	}
	if got := len(fast.ch); got != 3 {
		t.Errorf("the page with room has %d events, want 3", got)
	}
	if _, upTo := h.join(1, 1<<20); upTo != 13 {
		t.Errorf("a page joining now replays up to %d, want 13", upTo)
	}
	h.leave(fast)
	h.publish(events.FeedEvent{Seq: 14})
	if got := len(fast.ch); got != 3 {
		t.Errorf("a page that left got %d events, want the 3 from before", got)
	}
}

// TestHubDropsAPageHoldingTooManyBytes: a page whose waiting events hold
// more than its bytes is dropped, though its buffer has room for more
// events; a page that takes its events is not.
func TestHubDropsAPageHoldingTooManyBytes(t *testing.T) {
	h := newHub()
	big := bytes.Repeat([]byte("x"), 400)
	slow, _ := h.join(100, 1000)
	reader, _ := h.join(100, 1000)
	for seq := uint64(1); seq <= 3; seq++ {
		h.publish(events.FeedEvent{Data: big, Seq: seq})
		select {
		case e := <-reader.ch:
			reader.took(e)
		default:
			t.Fatalf("event %d did not reach the page that reads", seq)
		}
	}
	select {
	case <-slow.gone:
	default:
		t.Fatalf("the page holding %d bytes of a bound of 1000 was not dropped", slow.queued.Load())
	}
	if got := len(slow.ch); got != 2 {
		t.Errorf("the dropped page holds %d events, want the 2 that fit", got)
	}
	select {
	case <-reader.gone:
		t.Fatal("the page that reads was dropped")
	default:
	}
}
