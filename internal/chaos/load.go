package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// newPlan deals cfg.Messages messages round-robin over cfg.Sessions
// sessions and spreads each session's messages over cfg.Duration with
// random gaps, some of them much shorter than a run, so that a session's
// next message often arrives while its previous run goes on (or was
// interrupted).
func newPlan(cfg *Config, rng *rand.Rand) *check.Plan {
	p := &check.Plan{}
	for i := range cfg.Sessions {
		p.Sessions = append(p.Sessions, &check.SessionPlan{Name: fmt.Sprintf("s%02d", i)})
	}
	for k := range cfg.Messages {
		s := p.Sessions[k%len(p.Sessions)]
		s.Messages = append(s.Messages, &check.Message{
			ID:      fmt.Sprintf("m-%d-%s-%d", cfg.Seed, s.Name, len(s.Messages)),
			Session: s.Name,
		})
	}
	for _, s := range p.Sessions {
		if len(s.Messages) == 0 {
			continue
		}
		mean := cfg.Duration / time.Duration(len(s.Messages))
		s.Start = time.Duration(rng.Int64N(int64(mean) + 1))
		for i, m := range s.Messages {
			if i > 0 {
				// Uniform in [0, 1.6 mean): a third of the gaps are shorter
				// than half a mean.
				m.Gap = time.Duration(rng.Int64N(int64(mean)*16/10 + 1))
			}
			m.Dup = rng.Float64() < cfg.DuplicateRate
			m.DupHeader = rng.IntN(2) == 0
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
func publish(ctx context.Context, js jetstream.JetStream, p *check.Plan, logf func(string, ...any)) error {
	sem := make(chan struct{}, publishers)
	var wg sync.WaitGroup
	errs := make(chan error, len(p.Sessions))
	for _, s := range p.Sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := proc.Pause(ctx, s.Start); err != nil {
				errs <- err
				return
			}
			for _, m := range s.Messages {
				if err := proc.Pause(ctx, m.Gap); err != nil {
					errs <- err
					return
				}
				if err := publishOne(ctx, js, sem, m.Session, m.ID, true); err != nil {
					errs <- err
					return
				}
				if m.Dup {
					if err := publishOne(ctx, js, sem, m.Session, m.ID, m.DupHeader); err != nil {
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
