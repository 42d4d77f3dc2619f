package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// plan is the seeded load: per session, its messages in publish order.
type plan struct {
	sessions []*sessionPlan
}

// sessionPlan is one session's messages.
type sessionPlan struct {
	name     string
	start    time.Duration // delay before its first message
	messages []*message
}

// message is one user message of the load.
type message struct {
	id      string
	session string
	gap     time.Duration // wait after the previous message of the session
	// dup: the message is sent twice; dupHeader says whether the second
	// copy has the first copy's Nats-Msg-Id (else only the payload id).
	dup, dupHeader bool

	mu        sync.Mutex
	published time.Time // when the first copy was acknowledged
}

// publishOrder returns the session's ids in publish order.
func (s *sessionPlan) publishOrder() []string {
	ids := make([]string, len(s.messages))
	for i, m := range s.messages {
		ids[i] = m.id
	}
	return ids
}

// count returns the messages and the duplicates of the plan.
func (p *plan) count() (messages, dups int) {
	for _, s := range p.sessions {
		for _, m := range s.messages {
			messages++
			if m.dup {
				dups++
			}
		}
	}
	return
}

// newPlan deals cfg.Messages messages round-robin over cfg.Sessions
// sessions and spreads each session's messages over cfg.Duration with
// random gaps, some of them much shorter than a run, so that a session's
// next message often arrives while its previous run goes on (or was
// interrupted).
func newPlan(cfg *Config, rng *rand.Rand) *plan {
	p := &plan{}
	for i := range cfg.Sessions {
		p.sessions = append(p.sessions, &sessionPlan{name: fmt.Sprintf("s%02d", i)})
	}
	for k := range cfg.Messages {
		s := p.sessions[k%len(p.sessions)]
		s.messages = append(s.messages, &message{
			id:      fmt.Sprintf("m-%d-%s-%d", cfg.Seed, s.name, len(s.messages)),
			session: s.name,
		})
	}
	for _, s := range p.sessions {
		if len(s.messages) == 0 {
			continue
		}
		mean := cfg.Duration / time.Duration(len(s.messages))
		s.start = time.Duration(rng.Int64N(int64(mean) + 1))
		for i, m := range s.messages {
			if i > 0 {
				// Uniform in [0, 1.6 mean): a third of the gaps are shorter
				// than half a mean.
				m.gap = time.Duration(rng.Int64N(int64(mean)*16/10 + 1))
			}
			m.dup = rng.Float64() < cfg.DuplicateRate
			m.dupHeader = rng.IntN(2) == 0
		}
	}
	return p
}

// payload is the JSON user message of an id.
func payload(id string) []byte {
	b, _ := json.Marshal(map[string]string{"content": "task " + id, "id": id})
	return b
}

// publishers bounds the publishes in flight at once.
const publishers = 4

// publish sends the plan: each session's messages in order, one goroutine
// per session, at most publishers publishes in flight. Every publish is a
// JetStream publish, retried until the server acknowledges it (it may be
// down); it returns when every message is stored.
func publish(ctx context.Context, js jetstream.JetStream, p *plan, logf func(string, ...any)) error {
	sem := make(chan struct{}, publishers)
	var wg sync.WaitGroup
	errs := make(chan error, len(p.sessions))
	for _, s := range p.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := proc.Pause(ctx, s.start); err != nil {
				errs <- err
				return
			}
			for _, m := range s.messages {
				if err := proc.Pause(ctx, m.gap); err != nil {
					errs <- err
					return
				}
				if err := publishOne(ctx, js, sem, m.session, m.id, true); err != nil {
					errs <- err
					return
				}
				m.mu.Lock()
				m.published = time.Now()
				m.mu.Unlock()
				if m.dup {
					if err := publishOne(ctx, js, sem, m.session, m.id, m.dupHeader); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

// publishOne publishes one copy of message id until it is acknowledged.
// withHeader sets Nats-Msg-Id to the id (so that JetStream de-duplicates
// the copies, and the retries of one copy).
func publishOne(ctx context.Context, js jetstream.JetStream, sem chan struct{}, session, id string, withHeader bool) error {
	msg := nats.NewMsg(subjectIn(session))
	msg.Data = payload(id)
	msg.Header.Set("traceparent", traceparentOf(id))
	if withHeader {
		msg.Header.Set(jetstream.MsgIDHeader, id)
	}
	for attempt := 1; ; attempt++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.PublishMsg(pctx, msg)
		cancel()
		<-sem
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("publish %s: %w", id, err)
		}
		if err := proc.Pause(ctx, time.Duration(min(attempt, 10))*50*time.Millisecond); err != nil {
			return fmt.Errorf("publish %s: %w", id, err)
		}
	}
}
