package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/history"
	"github.com/agentfleet/agentfleet/internal/lead"
)

// Start connects the tool client, discovers the fleet and, when durable,
// opens the streams; then it serves, or, with election, serves once it
// holds the lead (a standby returns at once and takes over later).
func (o *Orchestrator) Start(ctx context.Context) error {
	var err error
	tc := o.cfg.Tools
	tc.Prefix = o.subjects.Prefix
	if o.cfg.Observer != nil {
		tc.Observe = func(tool, outcome, _ string) { o.cfg.Observer.ToolAttempt(tool, outcome) }
	}
	if o.client, err = bus.NewToolClient(o.nc, tc); err != nil {
		return fmt.Errorf("orchestrator: %w", err)
	}
	dc := o.cfg.Discovery
	dc.Logger = o.log
	dc.OnChange = o.updateTools
	dc.OnSkipped = func(worker, endpoint string, err error) {
		o.pub.Emit(&agentfleet.Event{
			Type: agentfleet.EventError, Agent: "_", Session: "fleet", Time: time.Now().UTC(), Worker: worker, ToolName: endpoint,
			ErrorMessage: fmt.Sprintf("worker %s: endpoint %s skipped: %v", worker, endpoint, err),
		})
	}
	// The client keeps no more calls of a tool in flight than the fleet
	// has slots for, and follows the fleet as workers join and leave.
	dc.OnCapacity = o.client.SetCapacity
	if o.fleet, err = bus.WatchFleet(ctx, o.nc, o.subjects, dc); err != nil {
		return errors.Join(fmt.Errorf("orchestrator: %w", err), o.client.Close())
	}
	o.input = bus.NewInput(o.nc, o.subjects, o, o.pub, o.log)
	if o.cfg.Observer != nil {
		o.input.OnInput = o.cfg.Observer.Input
	}
	if o.toolsSub, err = o.answerTools(); err != nil {
		return errors.Join(fmt.Errorf("orchestrator: %w", err), o.fleet.Close(), o.client.Close())
	}
	fail := func(err error) error {
		return errors.Join(fmt.Errorf("orchestrator: %w", err), o.toolsSub.Unsubscribe(), o.fleet.Close(), o.client.Close())
	}
	if o.cfg.Durable {
		o.durable, err = bus.OpenDurable(ctx, o.nc, o.subjects, o.cfg.DurableConfig)
		if errors.Is(err, bus.ErrNoJetStream) && o.cfg.DurableOptional {
			o.log.Warn("the NATS server has no JetStream: input is not durable and sessions are kept in memory only", "err", err)
			o.durable, o.cfg.Durable = nil, false
		} else if err != nil {
			return fail(err)
		}
	}
	if o.durable != nil {
		dc := o.durable.Config()
		o.history, err = history.Open(ctx, o.durable.JetStream(), o.subjects, o.id, history.Config{MaxAge: dc.HistoryMaxAge, Replicas: dc.Replicas})
		if err != nil {
			return fail(err)
		}
		o.input.Kinds = []string{bus.KindAsk, bus.KindAbort}
	}
	o.bg.Add(1)
	go o.evict()
	if o.durable == nil || !o.cfg.Elect {
		if err := o.serve(ctx, nil); err != nil {
			return fail(err)
		}
		return nil
	}
	o.election, err = lead.New(ctx, o.durable.JetStream(), o.subjects, o.id, lead.Config{TTL: o.cfg.LeaderTTL, Replicas: o.durable.Config().Replicas, Logger: o.log})
	if err != nil {
		return fail(err)
	}
	term, holder, err := o.election.TryAcquire(ctx)
	if err != nil {
		return fail(err)
	}
	if term != nil {
		if err := o.serve(ctx, term); err != nil {
			return errors.Join(fail(err), term.Release(context.Background()))
		}
	} else {
		o.log.Info("orchestrator standing by", "leader", holder)
	}
	o.bg.Add(1)
	go o.campaign(term)
	return nil
}

// campaign keeps this orchestrator in the election for its whole life:
// while it leads, it waits for the term to be lost, suspends what it runs
// and stands by; while it stands by, it tries for the lead and serves once
// it has it. A standby that wins but cannot serve gives the lead back.
func (o *Orchestrator) campaign(term *lead.Term) {
	defer o.bg.Done()
	for {
		if term == nil {
			t, err := o.election.Acquire(o.life)
			if err != nil {
				return // closing
			}
			if err := o.serve(o.life, t); err != nil {
				o.log.Error("taking over", "err", err)
				o.unserve()
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				t.Release(rctx)
				cancel()
				select {
				case <-o.life.Done():
					return
				case <-time.After(o.election.TTL() / 4):
				}
				continue
			}
			term = t
		}
		select {
		case <-o.life.Done():
			return
		case <-term.Lost():
		}
		o.demote(lead.ErrLost)
		if o.cfg.OnLostLead != nil {
			o.cfg.OnLostLead()
		}
		term = nil
	}
}

// serve takes input under term (nil without election): the durable
// consumer and the core subscriptions; then it loads, in the background,
// every session that has input in the stream, so that their interrupted
// runs resume at once rather than when their messages come back.
func (o *Orchestrator) serve(ctx context.Context, term *lead.Term) error {
	o.mu.Lock()
	o.term = term
	o.mu.Unlock()
	if o.durable != nil {
		d, err := o.durable.Input(ctx, o.input)
		if err != nil {
			return err
		}
		o.mu.Lock()
		o.in = d
		o.mu.Unlock()
		if err := d.Start(ctx); err != nil {
			return err
		}
	}
	if err := o.input.Start(); err != nil {
		return err
	}
	o.mu.Lock()
	o.leading = true
	o.mu.Unlock()
	if d := o.dinput(); d != nil {
		o.bg.Add(1)
		go o.loadPending(d)
	}
	o.log.Info("orchestrator serving", "prefix", o.subjects.Prefix, "durable", o.durable != nil, "leader", term != nil,
		"agents", slices.Sorted(maps.Keys(o.agents)), "tools", len(o.fleet.Tools()), "worker_services", o.fleet.Workers())
	if len(o.fleet.Tools()) == 0 {
		o.log.Warn("no tool worker serves any tool yet: the agents have only the orchestrator's own tools until one joins; start a toolworker on this NATS server (or the orchestrator with --workers N)")
	}
	return nil
}

// loadPending loads the sessions that have input in the stream, and says
// at info level what it found and, once the loads are done, how many
// interrupted runs it resumed: after a crash, the operator's first sign
// that work was picked up again.
func (o *Orchestrator) loadPending(d *bus.DurableInput) {
	defer o.bg.Done()
	ctx, cancel := context.WithTimeout(o.life, o.cfg.LoadTimeout)
	keys, err := d.Sessions(ctx)
	cancel()
	if err != nil {
		if o.life.Err() == nil { // not merely stopped right after the start
			o.log.Warn("sessions with pending input", "err", err)
		}
		return
	}
	if len(keys) == 0 {
		o.log.Debug("recovering: no session has input in the stream")
		return
	}
	o.log.Info(fmt.Sprintf("recovering: %d sessions have input in the stream, loading them", len(keys)), "sessions", len(keys))
	var loading []*session
	for _, k := range keys {
		a, ok := o.agents[k[0]]
		if !ok || bus.CheckToken("session", k[1]) != nil {
			o.log.Warn("recovering: input in the stream for an unknown agent or a bad session name", "agent", k[0], "session", k[1])
			continue
		}
		s, err := o.acquire(a, k[1])
		if err != nil {
			return
		}
		loading = append(loading, s)
	}
	resumed, failed := 0, 0
	for _, s := range loading {
		select {
		case <-s.ready:
		case <-o.life.Done():
			return
		}
		s.mu.Lock()
		resumed += s.resumed
		if !s.loaded {
			failed++
		}
		s.mu.Unlock()
	}
	attrs := []any{"sessions", len(loading), "runs", resumed}
	if failed > 0 {
		o.log.Warn(fmt.Sprintf("recovered: %d interrupted runs resumed; %d sessions could not be loaded and are tried again when their input is delivered again", resumed, failed), append(attrs, "failed", failed)...)
		return
	}
	o.log.Info(fmt.Sprintf("recovered: %d interrupted runs resumed", resumed), attrs...)
}

// unserve stops taking input.
func (o *Orchestrator) unserve() error {
	o.mu.Lock()
	o.leading = false
	d := o.in
	o.in = nil
	o.mu.Unlock()
	if d != nil {
		d.Stop()
	}
	if o.input != nil {
		return o.input.Stop()
	}
	return nil
}

// demote is what a leader does when its term is lost: it stops taking
// input, suspends every session (their runs stop without ending, nothing
// more is stored or acknowledged) and forgets them; the next leader resumes
// them from the store.
func (o *Orchestrator) demote(why error) {
	o.log.Error("this orchestrator lost the lead: it suspends its runs and stands by", "err", why)
	o.unserve()
	o.mu.Lock()
	sessions := slices.Collect(maps.Values(o.sessions))
	o.sessions = map[string]*session{}
	o.term = nil
	o.mu.Unlock()
	for _, s := range sessions {
		s.evicted.Store(true)
		s.suspend(why, leaveAlone)
	}
	for _, s := range sessions {
		if s.loop != nil {
			wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.loop.Wait(wctx)
			cancel()
		}
	}
}

// leadErr returns nil while this orchestrator may write and acknowledge:
// it holds its lead (or there is no election) and is not past its shutdown
// grace.
func (o *Orchestrator) leadErr() error {
	o.mu.Lock()
	term, stopping := o.term, o.stopping
	elect := o.election != nil
	o.mu.Unlock()
	if stopping {
		return errShutdown
	}
	if term != nil {
		return term.Valid()
	}
	if elect {
		return lead.ErrLost
	}
	return nil
}

var errShutdown = errors.New("the orchestrator is shutting down")

// Leading reports whether this orchestrator takes input (it is the active
// one, or leadership is off).
func (o *Orchestrator) Leading() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.leading
}

func (o *Orchestrator) dinput() *bus.DurableInput {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.in
}

// Close stops taking input and waits for active runs to end. Runs still
// active when ctx ends are suspended: nothing more of them is stored or
// acknowledged, their input is handed back to the stream, and a restart (or
// another orchestrator) resumes them from their stored history.
func (o *Orchestrator) Close(ctx context.Context) error {
	o.closeOnce.Do(func() { o.closeErr = o.close(ctx) })
	return o.closeErr
}

func (o *Orchestrator) close(ctx context.Context) error {
	o.endLife()
	var errs []error
	errs = append(errs, o.unserve())
	o.bg.Wait()
	// A standby may have begun to serve while the loops stopped.
	errs = append(errs, o.unserve())
	o.mu.Lock()
	o.closed = true
	sessions := slices.Collect(maps.Values(o.sessions))
	term := o.term
	o.mu.Unlock()
	late := false
	for _, s := range sessions {
		if s.loop == nil {
			continue
		}
		if err := s.loop.Wait(ctx); err != nil {
			late = true
			break
		}
	}
	if late {
		o.mu.Lock()
		o.stopping = true
		o.mu.Unlock()
		for _, s := range sessions {
			s.suspend(errShutdown, handOver)
		}
		for _, s := range sessions {
			if s.loop == nil {
				continue
			}
			wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, s.loop.Wait(wctx))
			cancel()
		}
	}
	if term != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, term.Release(rctx))
		cancel()
	}
	if o.toolsSub != nil {
		errs = append(errs, o.toolsSub.Unsubscribe())
	}
	if o.fleet != nil {
		errs = append(errs, o.fleet.Close())
	}
	if o.client != nil {
		errs = append(errs, o.client.Close())
	}
	return errors.Join(errs...)
}
