package history

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// replies takes the answers to a store's requests (its appends'
// acknowledgements, its direct gets): one subscription on an inbox of the
// store's own, each answer handed to the request waiting for it by the last
// token of its reply subject. A request waits on its own timer and on its
// session's context directly, so that it makes no context of its own
// (jetstream's PublishMsg and GetMsg want one with a deadline, and one
// derived from a session's context would stay registered with it).
type replies struct {
	nc      *nats.Conn
	stream  string // the stream's name, for its acknowledgements
	once    sync.Once
	err     error
	prefix  string // the inbox, with its trailing dot
	mu      sync.Mutex
	next    uint64
	waiting map[string]chan *nats.Msg
}

func (r *replies) start() error {
	r.once.Do(func() {
		r.prefix = r.nc.NewRespInbox() + "."
		r.waiting = map[string]chan *nats.Msg{}
		_, r.err = r.nc.Subscribe(r.prefix+"*", func(m *nats.Msg) {
			r.mu.Lock()
			ch := r.waiting[m.Subject[len(r.prefix):]]
			r.mu.Unlock()
			if ch != nil {
				select {
				case ch <- m:
				default: // an answer already came (a duplicate)
				}
			}
		})
	})
	return r.err
}

// request publishes msg with a reply subject of the store's inbox and waits
// for its answer until timeout or the end of ctx, whose cause it returns.
// The answer may be a status message (503: no responders).
func (r *replies) request(ctx context.Context, msg *nats.Msg, timeout time.Duration) (*nats.Msg, error) {
	if err := r.start(); err != nil {
		return nil, fmt.Errorf("history: subscribe to the stream's answers: %w", err)
	}
	ch := make(chan *nats.Msg, 1)
	r.mu.Lock()
	r.next++
	token := strconv.FormatUint(r.next, 36)
	r.waiting[token] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiting, token)
		r.mu.Unlock()
	}()
	msg.Reply = r.prefix + token
	if err := r.nc.PublishMsg(msg); err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-t.C:
		return nil, fmt.Errorf("no answer from the stream in %v: %w", timeout, context.DeadlineExceeded)
	}
}
