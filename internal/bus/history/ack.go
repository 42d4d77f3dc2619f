package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// acks takes the acknowledgements of a store's appends: one subscription on
// an inbox of the store's own, each acknowledgement handed to the attempt
// waiting for it by the last token of its reply subject. An attempt waits on
// its own timer and on its session's context directly, so that it makes no
// context of its own (jetstream's PublishMsg wants one with a deadline, and
// one derived from a session's context would stay registered with it).
type acks struct {
	nc      *nats.Conn
	once    sync.Once
	err     error
	prefix  string // the inbox, with its trailing dot
	mu      sync.Mutex
	next    uint64
	waiting map[string]chan *nats.Msg
}

func (a *acks) start() error {
	a.once.Do(func() {
		a.prefix = a.nc.NewRespInbox() + "."
		a.waiting = map[string]chan *nats.Msg{}
		_, a.err = a.nc.Subscribe(a.prefix+"*", func(m *nats.Msg) {
			a.mu.Lock()
			ch := a.waiting[m.Subject[len(a.prefix):]]
			a.mu.Unlock()
			if ch != nil {
				select {
				case ch <- m:
				default: // an answer already came (a duplicate)
				}
			}
		})
	})
	return a.err
}

// publish stores msg in the stream and waits for its acknowledgement until
// timeout or the end of ctx, whose cause it returns. Its errors are those
// jetstream's PublishMsg gives: an *jetstream.APIError for the stream's
// refusal, jetstream.ErrNoStreamResponse when no stream takes the subject.
func (a *acks) publish(ctx context.Context, msg *nats.Msg, timeout time.Duration) (*jetstream.PubAck, error) {
	if err := a.start(); err != nil {
		return nil, fmt.Errorf("history: subscribe acknowledgements: %w", err)
	}
	ch := make(chan *nats.Msg, 1)
	a.mu.Lock()
	a.next++
	token := strconv.FormatUint(a.next, 36)
	a.waiting[token] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiting, token)
		a.mu.Unlock()
	}()
	msg.Reply = a.prefix + token
	if err := a.nc.PublishMsg(msg); err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-ch:
		return parseAck(m)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-t.C:
		return nil, fmt.Errorf("no acknowledgement from the stream in %v: %w", timeout, context.DeadlineExceeded)
	}
}

// parseAck reads the stream's answer to a publish.
func parseAck(m *nats.Msg) (*jetstream.PubAck, error) {
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return nil, jetstream.ErrNoStreamResponse
	}
	var resp struct {
		jetstream.PubAck
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, fmt.Errorf("history: the stream's acknowledgement %.64q: %w", m.Data, err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	if resp.Stream == "" {
		return nil, errors.New("history: an acknowledgement that names no stream")
	}
	return &resp.PubAck, nil
}
