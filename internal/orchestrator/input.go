package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/inputpolicy"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/google/uuid"
)

// HandleInput takes one message from a client subject. It never blocks on a
// run or on the store: a session that is not in memory is loaded in the
// background while its input waits; ask replies are sent, and durable input
// settled, when the run that took the message ends. What is done with the
// message is the input policy's (inputpolicy.Step); HandleInput carries it
// out.
func (o *Orchestrator) HandleInput(in *input.Inbound) error {
	a, err := o.lookup(in.Agent)
	if err != nil {
		return err
	}
	if err := bus.CheckToken("session", in.Session); err != nil {
		return err
	}
	if err := o.admit(in.Agent, in.Message); err != nil {
		return err
	}
	if err := o.tombs.Refuses(in.Agent, in.Session, in.Seq, time.Now()); err != nil {
		return err
	}
	d := delivery(in, false)
	var st inputpolicy.State
	if d.Durable {
		st.Owned = o.owns(bus.Partition(in.Agent, in.Session))
	}
	var found *session
	if d.Kind == inputpolicy.Abort {
		o.mu.Lock()
		found = o.sessions[in.Agent+"."+in.Session]
		o.mu.Unlock()
		st.InMemory = found != nil && !found.evicted.Load()
	}
	_, acts := inputpolicy.Step(st, d)
	for _, act := range acts {
		switch act.Op {
		case inputpolicy.Nak:
			// Its partition is being handed over: the next owner takes it.
			in.Nak()
		case inputpolicy.Reject:
			return act.Err
		case inputpolicy.Take:
			if !act.Load {
				found.deliver(in)
				return nil
			}
			name(in)
			for {
				s, err := o.acquire(a, in.Session)
				if err != nil {
					return err
				}
				if s.deliver(in) {
					return nil
				}
			}
		}
	}
	return nil
}

// name gives a message or a decision without an id one.
func name(in *input.Inbound) {
	switch {
	case in.Message != nil && in.Message.ID == "":
		// Every message has an id, so that its run can be found.
		in.Message.ID = in.Kind + "-" + uuid.NewString()
	case in.Decision != nil && in.Decision.ID == "":
		// A decision names itself, so that the losers of a race can be
		// told which one won.
		in.Decision.ID = "approve-" + uuid.NewString()
	}
}

// deliver hands one input message to the session: held while it loads,
// handled at once after. It reports false when the session was evicted
// meanwhile, so the caller takes a fresh one.
func (s *session) deliver(in *input.Inbound) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stepLocked(in, false, false)
}

// acquire returns the session in memory, or a new one that loads in the
// background.
func (o *Orchestrator) acquire(a *agent, name string) (*session, error) {
	key := a.profile.Name + "." + name
	o.mu.Lock()
	old := o.sessions[key]
	o.mu.Unlock()
	if old != nil && !old.evicted.Load() && old.handedOverIdle() {
		// Loaded again, it is served by the agent it was handed to.
		o.forget(old)
		old.cancel(context.Canceled)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, errors.New("orchestrator is shutting down")
	}
	if s, ok := o.sessions[key]; ok && !s.evicted.Load() {
		if !s.outdated(o.table) {
			return s, nil
		}
		o.log.Warn("session in memory under a fence that never holds: taken in again", "agent", a.profile.Name, "session", name, "fence", s.fence.String())
		s.evicted.Store(true)
		go s.suspend(errOutdated, inputpolicy.RetryLater)
	}
	s := newSession(o, a, name, key)
	o.sessions[key] = s
	go s.load(o.loads)
	return s, nil
}

// forget drops s from memory, if it is still the session of its key.
func (o *Orchestrator) forget(s *session) {
	s.evicted.Store(true)
	o.mu.Lock()
	if o.sessions[s.key] == s {
		delete(o.sessions, s.key)
	}
	o.mu.Unlock()
}

func (o *Orchestrator) observeInput(outcome string) {
	if o.cfg.Observer != nil {
		o.cfg.Observer.Input(outcome)
	}
}

// Session returns the session of agentName, loading it first if it is not
// in memory (for tools and benchmarks that drive a session directly).
func (o *Orchestrator) Session(agentName, name string) (*loop.Session, error) {
	a, err := o.lookup(agentName)
	if err != nil {
		return nil, err
	}
	if err := bus.CheckToken("session", name); err != nil {
		return nil, err
	}
	for {
		s, err := o.acquire(a, name)
		if err != nil {
			return nil, err
		}
		<-s.ready
		s.mu.Lock()
		l, loaded := s.loop, s.loaded
		s.mu.Unlock()
		if loaded {
			return l, nil
		}
		if s.evicted.Load() && !loaded {
			return nil, fmt.Errorf("session %s of agent %s could not be loaded", name, agentName)
		}
	}
}

// Sessions returns the number of sessions in memory.
func (o *Orchestrator) Sessions() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.sessions)
}

// evict drops sessions idle for longer than SessionIdle from memory.
func (o *Orchestrator) evict() {
	defer o.bg.Done()
	idle := o.cfg.SessionIdle
	t := time.NewTicker(max(idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-o.life.Done():
			return
		case <-t.C:
		}
		o.mu.Lock()
		sessions := slices.Collect(maps.Values(o.sessions))
		o.mu.Unlock()
		for _, s := range sessions {
			s.mu.Lock()
			evict := s.idleLocked(idle)
			if evict {
				s.evicted.Store(true)
			}
			s.mu.Unlock()
			if evict {
				o.forget(s)
				s.cancel(context.Canceled)
			}
		}
	}
}
