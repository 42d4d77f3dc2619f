package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
	"github.com/nats-io/nats.go/jetstream"
)

// liveLoad is a load written as it is sent, for scenarios that aim
// messages at chosen sessions at chosen moments: the plan it builds holds
// each session's messages in the order JetStream acknowledged them (the
// sends of one session are serialized), ready for check.Verify and quiesce.
type liveLoad struct {
	js   jetstream.JetStream
	sem  chan struct{}
	plan *check.Plan

	mu       sync.Mutex
	sessions map[string]*liveSession
	held     map[string]bool // sessions the trickle leaves alone
}

type liveSession struct {
	mu sync.Mutex // held across a send, so that the plan keeps the order
	sp *check.SessionPlan
}

// newLiveLoad returns a load over the named sessions, with no message yet.
func newLiveLoad(js jetstream.JetStream, sessions []string) *liveLoad {
	l := &liveLoad{js: js, sem: make(chan struct{}, publishers), plan: &check.Plan{}, sessions: map[string]*liveSession{}, held: map[string]bool{}}
	for _, s := range sessions {
		sp := &check.SessionPlan{Name: s}
		l.plan.Sessions = append(l.plan.Sessions, sp)
		l.sessions[s] = &liveSession{sp: sp}
	}
	return l
}

// send publishes message id to session, retrying until JetStream
// acknowledges it, and adds it to the plan. A send cut short by ctx may
// have been stored: the caller must treat that as a harness failure.
func (l *liveLoad) send(ctx context.Context, session, id string) error {
	l.mu.Lock()
	s := l.sessions[session]
	l.mu.Unlock()
	if s == nil {
		return fmt.Errorf("send %s: session %s is not in the load", id, session)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := publishOne(ctx, l.js, l.sem, session, id, true); err != nil {
		return err
	}
	m := &check.Message{ID: id, Session: session}
	l.mu.Lock()
	s.sp.Messages = append(s.sp.Messages, m)
	l.mu.Unlock()
	return nil
}

// sendAll sends one message to each session at once; ids[i] goes to
// sessions[i].
func (l *liveLoad) sendAll(ctx context.Context, sessions, ids []string) error {
	errs := make(chan error, len(sessions))
	for i, s := range sessions {
		go func() { errs <- l.send(ctx, s, ids[i]) }()
	}
	var first error
	for range sessions {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// hold makes the trickle leave sessions alone until release: a message
// aimed at one of them must not be taken into one run with a later one.
func (l *liveLoad) hold(sessions []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range sessions {
		l.held[s] = true
	}
}

// release ends every hold.
func (l *liveLoad) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.held)
}

func (l *liveLoad) isHeld(session string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[session]
}

// trickle sends one message every interval to the sessions in turn, but
// those held, until stop is closed, then returns (it never cuts a send
// short but for ctx).
func (l *liveLoad) trickle(ctx context.Context, sessions []string, interval time.Duration, stop <-chan struct{}) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for k := 0; ; k++ {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		s := sessions[k%len(sessions)]
		if l.isHeld(s) {
			continue
		}
		if err := l.send(ctx, s, fmt.Sprintf("m-%s-%d", s, k/len(sessions))); err != nil {
			return err
		}
	}
}

// messages returns how many messages were sent.
func (l *liveLoad) messages() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, _ := l.plan.Count()
	return n
}

// longTask returns an id, from base, whose run holds the model's longest
// sleeps (at least 300 ms) and calls the ledger, so that it is in flight
// for a while once its tools start.
func longTask(base string) string {
	for k := 0; ; k++ {
		id := fmt.Sprintf("%s-%d", base, k)
		if model.SleepMS(id) >= 300 && model.UsesLedger(id) {
			return id
		}
	}
}
