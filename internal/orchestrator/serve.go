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
	"github.com/agentfleet/agentfleet/internal/bus/erase"
	busfleet "github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	businput "github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/agentfleet/agentfleet/internal/bus/services"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/inputpolicy"
)

// Start connects the tool client, discovers the fleet and, when durable,
// opens the streams and joins the partition table; it returns serving (with
// JetStream, the partitions the table gives it).
func (o *Orchestrator) Start(ctx context.Context) error {
	var err error
	tc := o.cfg.Tools
	tc.Prefix = o.subjects.Prefix
	if o.cfg.Observer != nil {
		tc.Observe = func(tool, outcome, _ string) { o.cfg.Observer.ToolAttempt(tool, outcome) }
	}
	if o.client, err = toolrpc.NewToolClient(o.nc, tc); err != nil {
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
	// Each call goes to the worker with the most free slots, of those
	// that take calls on their own subjects.
	dc.OnWorkers = o.client.SetWorkers
	if o.fleet, err = busfleet.WatchFleet(ctx, o.nc, o.subjects, dc); err != nil {
		return errors.Join(fmt.Errorf("orchestrator: %w", err), o.client.Close())
	}
	o.input = businput.NewInput(o.nc, o.subjects, o, o.pub, o.log)
	o.input.Replies = o.replies
	if o.cfg.Observer != nil {
		o.input.OnInput = o.cfg.Observer.Input
	}
	o.services, err = services.Start(o.life, o.nc, services.Config{Subjects: o.subjects, Replies: o.replies, Logger: o.log}, agentServices{o})
	if err != nil {
		return errors.Join(fmt.Errorf("orchestrator: %w", err), o.fleet.Close(), o.client.Close())
	}
	fail := func(err error) error {
		if o.forks != nil {
			o.forks.Close()
		}
		if o.erasing != nil {
			o.erasing.Close()
		}
		return errors.Join(fmt.Errorf("orchestrator: %w", err), o.services.Close(), o.fleet.Close(), o.client.Close())
	}
	if o.cfg.Durable {
		dc := o.cfg.DurableConfig
		if dc.Logger == nil {
			dc.Logger = o.log
		}
		o.durable, err = businput.OpenDurable(ctx, o.nc, o.subjects, dc)
		if errors.Is(err, businput.ErrNoJetStream) && o.cfg.DurableOptional {
			o.log.Warn("the NATS server has no JetStream: input is not durable and sessions are kept in memory only", "err", err)
			o.durable, o.cfg.Durable = nil, false
		} else if err != nil {
			return fail(err)
		} else {
			// The bound of a call's progress is a share of the event
			// stream as it is (its default size follows its storage).
			o.cfg.DurableConfig.EventsMaxBytes = o.durable.Config().EventsMaxBytes
		}
	}
	o.openObjects(ctx)
	o.bg.Add(1)
	go o.evict()
	if o.durable == nil {
		if err := o.serve(); err != nil {
			return fail(err)
		}
		o.logServing()
		return nil
	}
	dcfg := o.durable.Config()
	o.history, err = history.Open(ctx, o.durable.JetStream(), o.subjects, o.id, history.Config{MaxAge: dcfg.HistoryMaxAge, MaxBytes: dcfg.HistoryMaxBytes, Replicas: dcfg.Replicas})
	if err != nil {
		return fail(err)
	}
	o.opened.Store(o.history)
	o.openOutcomes(ctx, dcfg.Replicas)
	if o.forks, err = timetravel.Serve(o.life, o.nc, timetravel.Config{
		Subjects: o.subjects, Store: o.history, Agent: o.CheckAgent, Model: o.forkModel, Replies: o.replies, Logger: o.log,
	}); err != nil {
		return fail(err)
	}
	if o.erasing, err = erase.Serve(o.life, o.nc, o.eraseConfig()); err != nil {
		return fail(err)
	}
	if o.in, err = o.durable.Input(ctx, o.input); err != nil {
		return fail(err)
	}
	// Asks and aborts go through the input stream to the session's owner,
	// whichever orchestrator the server hands them to.
	o.input.Relayed(o.durable.JetStream())
	o.input.Check = o.check
	if err := o.serve(); err != nil {
		o.in.Stop()
		return fail(err)
	}
	table, err := partition.New(ctx, o.durable.JetStream(), o.subjects, o.id, partition.Config{
		TTL: o.cfg.LeaseTTL, Replicas: dcfg.Replicas, Logger: o.log,
		Acquire: o.acquirePartition, Release: o.releasePartition, Lost: o.leaseLost,
	})
	if err != nil {
		o.in.Stop()
		return fail(err)
	}
	// Set before the first claim: the input it lets in asks the table.
	o.mu.Lock()
	o.table = table
	o.mu.Unlock()
	o.in.Fenced(table)
	if err := table.Join(ctx); err != nil {
		o.in.Stop()
		return fail(err)
	}
	o.observePartitions()
	o.logServing()
	return nil
}

// serve subscribes the core input subjects: all of them without JetStream;
// with it, the asks and aborts to relay.
func (o *Orchestrator) serve() error {
	return o.input.Start()
}

// logServing says that the orchestrator serves, and with what.
func (o *Orchestrator) logServing() {
	attrs := []any{"id", o.id, "prefix", o.subjects.Prefix, "durable", o.durable != nil,
		"agents", slices.Sorted(maps.Keys(o.agents)), "tools", len(o.fleet.Tools()), "worker_services", o.fleet.Workers()}
	if t := o.partitions(); t != nil {
		attrs = append(attrs, "partitions", len(t.Owned()), "orchestrators", len(t.Members()))
	}
	o.log.Info("orchestrator serving", attrs...)
	if len(o.fleet.Tools()) == 0 {
		o.log.Warn("no tool worker serves any tool yet: the agents have only the orchestrator's own tools until one joins; start a toolworker on this NATS server (or the orchestrator with --workers N)")
	}
}

// check vets an ask or abort before it is relayed.
func (o *Orchestrator) check(in *businput.Inbound) error {
	if err := o.CheckAgent(in.Agent); err != nil {
		return err
	}
	if err := o.admit(in.Agent, in.Message); err != nil {
		return err
	}
	return bus.CheckToken("session", in.Session)
}

// acquirePartition begins serving partition p, which this orchestrator now
// owns: its consumer, then, in the background, every session of p with
// input in the stream, so that their interrupted runs resume at once.
func (o *Orchestrator) acquirePartition(ctx context.Context, p int) error {
	if err := o.in.Serve(ctx, p); err != nil {
		return err
	}
	o.observePartitions()
	o.bg.Add(1)
	go o.loadPending(p)
	return nil
}

// releasePartition stops serving partition p: no more of its input is
// taken, its active runs may end until the handover deadline, and then
// what still runs is suspended, its input handed back to the stream for
// the next owner, and its sessions leave memory.
func (o *Orchestrator) releasePartition(p int) {
	o.in.Unserve(p)
	o.mu.Lock()
	var sessions []*session
	for _, s := range o.sessions {
		if s.part == p {
			sessions = append(sessions, s)
		}
	}
	ctx := o.drain
	o.mu.Unlock()
	cancel := func() {}
	if ctx == nil {
		ctx, cancel = context.WithTimeout(context.Background(), o.cfg.Handover)
	}
	defer cancel()
	for _, s := range sessions {
		if s.wait(ctx) != nil {
			break
		}
	}
	for _, s := range sessions {
		o.forget(s)
		s.suspend(errHandover, inputpolicy.HandOver)
	}
	for _, s := range sessions {
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.wait(wctx)
		cancel()
	}
	o.observePartitions()
	if len(sessions) > 0 {
		o.log.Info("partition handed over", "partition", p, "sessions", len(sessions))
	}
}

var errHandover = errors.New("the session's partition moves to another orchestrator")

// leaseLost is what an orchestrator does when its lease is lost: it owns
// nothing any more, so it stops taking input, suspends every session (their
// runs stop without ending, nothing more is stored or acknowledged) and
// forgets them; their next owners resume them from the store.
func (o *Orchestrator) leaseLost(why error) {
	o.in.Abandon()
	o.mu.Lock()
	sessions := slices.Collect(maps.Values(o.sessions))
	o.sessions = map[string]*session{}
	o.mu.Unlock()
	for _, s := range sessions {
		s.evicted.Store(true)
		s.suspend(why, inputpolicy.LeaveAlone)
	}
	for _, s := range sessions {
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.wait(wctx)
		cancel()
	}
	o.observePartitions()
	if o.cfg.OnLeaseLost != nil {
		o.cfg.OnLeaseLost()
	}
}

// loadPending loads the sessions that have input in the stream, and says
// at info level what it found and, once the loads are done, how many
// interrupted runs it resumed: after a crash, the operator's first sign
// that work was picked up again.
func (o *Orchestrator) loadPending(p int) {
	defer o.bg.Done()
	ctx, cancel := context.WithTimeout(o.life, o.cfg.LoadTimeout)
	keys, err := o.in.Sessions(ctx, p)
	cancel()
	if err != nil {
		if o.life.Err() == nil { // not merely stopped right after the start
			o.log.Warn("sessions with pending input", "err", err)
		}
		return
	}
	if len(keys) == 0 {
		return
	}
	o.log.Info(fmt.Sprintf("recovering: %d sessions of partition %d have input in the stream, loading them", len(keys), p), "partition", p, "sessions", len(keys))
	var loading []*session
	for _, k := range keys {
		a, ok := o.agents[k[0]]
		if !ok || bus.CheckToken("session", k[1]) != nil {
			o.log.Warn("recovering: input in the stream for an unknown agent or a bad session name", "agent", k[0], "session", k[1])
			continue
		}
		if !o.owns(p) {
			break // handed over meanwhile, or the lease lost: the next owner loads them
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
	attrs := []any{"partition", p, "sessions", len(loading), "runs", resumed}
	if failed > 0 {
		o.log.Warn(fmt.Sprintf("recovered: %d interrupted runs resumed; %d sessions could not be loaded and are tried again when their input is delivered again", resumed, failed), append(attrs, "failed", failed)...)
		return
	}
	o.log.Info(fmt.Sprintf("recovered: %d interrupted runs resumed", resumed), attrs...)
}

// unserve stops taking core input.
func (o *Orchestrator) unserve() error {
	if o.input != nil {
		return o.input.Stop()
	}
	return nil
}

// owns reports whether this orchestrator serves partition p now (always,
// without JetStream).
func (o *Orchestrator) owns(p int) bool {
	t := o.partitions()
	return t == nil || t.Owns(p)
}

// partitions returns the partition table (nil without JetStream, or
// before Start made it).
func (o *Orchestrator) partitions() *partition.Table {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.table
}

var errShutdown = errors.New("the orchestrator is shutting down")

// ID returns this orchestrator's id, as its events and records carry it.
func (o *Orchestrator) ID() string { return o.id }

// Partitions returns the partitions this orchestrator owns (none without
// JetStream, where it serves every session).
func (o *Orchestrator) Partitions() []int {
	t := o.partitions()
	if t == nil {
		return nil
	}
	return t.Owned()
}

func (o *Orchestrator) observePartitions() {
	if ob, ok := o.cfg.Observer.(interface{ PartitionsOwned(int) }); ok {
		ob.PartitionsOwned(len(o.Partitions()))
	}
}

func (o *Orchestrator) dinput() *businput.DurableInput { return o.in }

// Close stops taking input, hands every partition over, and waits for
// active runs to end. Runs still active when ctx ends are suspended:
// nothing more of them is stored or acknowledged, their input is handed
// back to the stream, and the partition's next owner resumes them from
// their stored history.
func (o *Orchestrator) Close(ctx context.Context) error {
	o.closeOnce.Do(func() { o.closeErr = o.close(ctx) })
	return o.closeErr
}

func (o *Orchestrator) close(ctx context.Context) error {
	o.endLife()
	var errs []error
	o.mu.Lock()
	o.drain = ctx
	o.mu.Unlock()
	errs = append(errs, o.unserve())
	if t := o.partitions(); t != nil {
		errs = append(errs, t.Leave())
	}
	o.bg.Wait()
	o.mu.Lock()
	o.closed = true
	sessions := slices.Collect(maps.Values(o.sessions))
	o.mu.Unlock()
	late := false
	for _, s := range sessions {
		if err := s.wait(ctx); err != nil {
			late = true
			break
		}
	}
	if late {
		o.mu.Lock()
		o.stopping = true
		o.mu.Unlock()
		for _, s := range sessions {
			s.suspend(errShutdown, inputpolicy.HandOver)
		}
		for _, s := range sessions {
			wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, s.wait(wctx))
			cancel()
		}
	}
	if o.in != nil {
		o.in.Stop()
	}
	if o.services != nil {
		errs = append(errs, o.services.Close())
	}
	if o.forks != nil {
		errs = append(errs, o.forks.Close())
	}
	if o.erasing != nil {
		errs = append(errs, o.erasing.Close())
	}
	if o.fleet != nil {
		errs = append(errs, o.fleet.Close())
	}
	if o.client != nil {
		errs = append(errs, o.client.Close())
	}
	return errors.Join(errs...)
}
