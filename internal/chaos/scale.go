package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
	"github.com/agentfleet/agentfleet/internal/chaos/observe"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go/jetstream"
)

// ScaleReport is what RunScale measured and found. Durations are from the
// fault to what they name.
type ScaleReport struct {
	Sessions, Messages int
	LeaseTTL           time.Duration
	// TwoOwn and ThreeOwn are the partitions each orchestrator owned once
	// two, then three, had joined.
	TwoOwn, ThreeOwn []int
	// StartsBy are the runs each orchestrator started (run.start) before the
	// kill; Starts the same at the end, of those that lived.
	StartsBy, Starts []int
	// The SIGKILL of an orchestrator: its runs in flight, until each was
	// resumed elsewhere, and until its partitions were owned by the others.
	KillInFlight int
	KillResumed  time.Duration
	KillMoved    time.Duration
	KillParts    int
	// The SIGTERM of another: until its partitions were owned by the last
	// one; its runs in flight at the signal, those of them the last one
	// resumed (the others ended within the grace); its exit.
	TermMoved    time.Duration
	TermParts    int
	TermInFlight int
	TermHanded   int
	TermExitErr  string
	// The SIGKILL of the NATS server leading AGENT_INPUT: how long it stayed
	// down, until a message sent right after the kill was acknowledged, and
	// until its run ended.
	LeaderDown time.Duration
	InputAcked time.Duration
	InputBack  time.Duration
	// LeaseLosses counts the last orchestrator's "lost its lease" lines: a
	// NATS server's death can cost the lease (and so the input) for a
	// while.
	LeaseLosses int
	// Exits are the processes that exited on their own (the harness
	// restarted them).
	Exits []Exit
	// Report is check.Verify's findings of the stored state after quiescing.
	Report *Report
	// Failures are the guarantees the scenario saw broken.
	Failures []string
	WorkDir  string
	Seconds  float64
}

func (r *ScaleReport) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// Line is the report's figures in one line.
func (r *ScaleReport) Line() string {
	ints := func(xs []int) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, "/")
	}
	sec := func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
	violations := -1
	if r.Report != nil {
		violations = r.Report.Total()
	}
	return fmt.Sprintf("scale-out: %d sessions, %d messages, lease TTL %v; partitions %s then %s; runs started before the kill %s; "+
		"SIGKILL orchestrator: %d runs in flight resumed in %s, %d partitions moved in %s (bound %s); "+
		"SIGTERM orchestrator: %d partitions moved in %s, %d runs in flight (%d resumed elsewhere), exit %s; "+
		"SIGKILL input leader (down %s): new input acked in %s, its run ended in %s, %d lease losses; %d violations, %d failures, %d unexpected exits; %.1fs",
		r.Sessions, r.Messages, r.LeaseTTL, ints(r.TwoOwn), ints(r.ThreeOwn), ints(r.StartsBy),
		r.KillInFlight, sec(r.KillResumed), r.KillParts, sec(r.KillMoved), sec(r.LeaseTTL+failoverSlack),
		r.TermParts, sec(r.TermMoved), r.TermInFlight, r.TermHanded, r.TermExitErr,
		sec(r.LeaderDown), sec(r.InputAcked), sec(r.InputBack), r.LeaseLosses, violations, len(r.Failures), len(r.Exits), r.Seconds)
}

// failoverSlack is how much longer than the lease TTL a failover may take.
const failoverSlack = 5 * time.Second

// handoverBound bounds a graceful handover, from SIGTERM.
const handoverBound = 5 * time.Second

// writeMargin is how long after a process died a record it had already
// sent may still be stored.
const writeMargin = 100 * time.Millisecond

// RunScale runs the scale-out scenario on a 3-node NATS cluster: two
// orchestrators split the 64 partitions, a third joins and takes its share;
// under a load over cfg.Sessions sessions (default 36) one orchestrator is
// SIGKILLed mid-run, another SIGTERMed mid-run, then the NATS server that
// leads the input stream is SIGKILLed and restarted. It measures each
// recovery, checks the stored state with check.Verify and that no killed or
// stopped orchestrator wrote after it was gone. cfg.NATSNodes,
// Orchestrators and Faults are set by the scenario. The error is for the
// harness failing; broken guarantees are the report's Failures and
// violations.
func RunScale(ctx context.Context, cfg Config) (rep *ScaleReport, err error) {
	cfg.NATSNodes, cfg.Orchestrators, cfg.Faults, cfg.DuplicateRate = 3, 3, -1, -1
	if cfg.Sessions <= 0 {
		cfg.Sessions = 36
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	began := time.Now()
	rep = &ScaleReport{Sessions: cfg.Sessions, LeaseTTL: cfg.LeaseTTL}
	dir := cfg.WorkDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "chaos-scale-"); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		defer func() {
			switch {
			case err != nil:
				err = fmt.Errorf("%w (work dir %s)", err, dir)
			case !cfg.KeepWorkDir && len(rep.Failures) == 0:
				os.RemoveAll(dir)
			default:
				rep.WorkDir = dir
			}
		}()
	}
	mdl, err := model.Start(0)
	if err != nil {
		return nil, err
	}
	defer mdl.Close()
	fl, err := newFleet(&cfg, dir, mdl.BaseURL())
	if err != nil {
		return nil, err
	}
	defer fl.close()
	if err := fl.startSome(ctx, 2); err != nil {
		return nil, fmt.Errorf("chaos: starting the fleet: %w", err)
	}
	if cfg.Hog {
		stopHog, err := proc.StartHog()
		if err != nil {
			return nil, err
		}
		defer stopHog()
	}
	nc, err := bus.Connect(bus.ConnectConfig{URL: fl.url, Name: "chaos-scale", Logger: quietLogger()})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	fl.js = js
	ev, err := observe.SubscribeRunEvents(nc)
	if err != nil {
		return nil, err
	}
	defer ev.Close()
	own, err := observe.WatchOwners(ctx, js)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer own.Stop()

	// 1. Two orchestrators, 32 partitions each; a third joins.
	ids := make([]string, 3)
	for i := range 2 {
		if ids[i], err = orchID(fl.orchs[i]); err != nil {
			return nil, err
		}
	}
	settle := proc.StartTimeout + 3*cfg.LeaseTTL
	if err := proc.WaitFor(ctx, settle, "two orchestrators owning 32 partitions each", func() (bool, error) {
		return own.Balanced(ids[:2], 32, 32)
	}); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	rep.TwoOwn = countsOf(own.Counts(), ids[:2])
	cfg.Logf("scale: two orchestrators own %v partitions after %v", rep.TwoOwn, time.Since(began).Round(time.Millisecond))

	sessions := make([]string, cfg.Sessions)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("s%02d", i)
	}
	const probeSession = "p00"
	load := newLiveLoad(js, append(slices.Clone(sessions), probeSession))
	stopTrickle := make(chan struct{})
	trickled := make(chan error, 1)
	go func() { trickled <- load.trickle(ctx, sessions, 100*time.Millisecond, stopTrickle) }()
	stopped := false
	stopLoad := func() error {
		if stopped {
			return nil
		}
		stopped = true
		close(stopTrickle)
		return <-trickled
	}
	defer func() { cancel(); _ = stopLoad() }()

	third := fl.orchs[2]
	if err := third.Restart(ctx); err != nil {
		return nil, err
	}
	if err := fl.waitMarked(ctx, third); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if ids[2], err = orchID(third); err != nil {
		return nil, err
	}
	const lo, hi = 16, 27 // 64/3 ±25%
	if err := proc.WaitFor(ctx, settle, "three orchestrators owning a third each", func() (bool, error) {
		return own.Balanced(ids, lo, hi)
	}); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	// Then the table settles: 64/3 or one more each.
	if err := proc.WaitFor(ctx, settle, "the table to settle", func() (bool, error) {
		return own.Balanced(ids, bus.Partitions/3, bus.Partitions/3+1)
	}); err != nil {
		rep.fail("%v", err)
	}
	rep.ThreeOwn = countsOf(own.Counts(), ids)
	cfg.Logf("scale: three orchestrators own %v partitions", rep.ThreeOwn)

	// 2. Every orchestrator runs a share.
	if err := proc.WaitFor(ctx, 30*time.Second, "every orchestrator to start runs", func() (bool, error) {
		c := countsOf(ev.StartsBy(), ids)
		return slices.Min(c) >= 5, fmt.Errorf("runs started %v", c)
	}); err != nil {
		rep.fail("%v", err)
	}
	rep.StartsBy = countsOf(ev.StartsBy(), ids)

	// 3. SIGKILL orchestrator-1 while runs of its sessions are in flight.
	victim, vid := fl.orchs[0], ids[0]
	vparts, err := burstAt(ctx, load, ev, own, sessions, vid, "k")
	if err != nil {
		return nil, err
	}
	killed := time.Now()
	if err := victim.Kill(ctx); err != nil {
		return nil, err
	}
	dead := time.Now()
	rep.KillParts = len(vparts)
	failover := cfg.LeaseTTL + failoverSlack
	var lastRead time.Time
	var pending []string
	werr := proc.WaitFor(ctx, failover+20*time.Second, "the killed orchestrator's partitions and runs to move", func() (bool, error) {
		moved, at := own.MovedAt(vparts, ids[1:])
		if moved && rep.KillMoved == 0 {
			rep.KillMoved = max(at.Sub(killed), time.Millisecond)
		}
		if time.Since(lastRead) < 300*time.Millisecond {
			return false, nil
		}
		lastRead = time.Now()
		hist, err := readHistory(ctx, js)
		if err != nil {
			return false, err
		}
		inflight := interrupted(hist, vid, vparts)
		pending = pending[:0]
		var last time.Duration
		n := 0
		for _, r := range inflight {
			res, ok := ev.ResumedBy(r[0], r[1])
			if !ok || !res.At.Before(killed) {
				n++
			}
			switch {
			case !ok:
				pending = append(pending, r[0]+"/"+check.Short(r[1]))
			case res.At.Before(killed):
				continue // moved earlier, when the third one joined
			case res.Orchestrator == vid:
				return false, fmt.Errorf("run %s/%s resumed by the killed orchestrator", r[0], r[1])
			default:
				last = max(last, res.At.Sub(killed))
			}
		}
		rep.KillInFlight, rep.KillResumed = n, last
		if !moved || len(pending) > 0 {
			return false, fmt.Errorf("partitions moved %v; runs not resumed %v", moved, pending)
		}
		return true, nil
	})
	if werr != nil {
		rep.fail("after the SIGKILL: %v", werr)
	}
	if rep.KillInFlight == 0 {
		rep.fail("no run of the killed orchestrator was in flight at the kill")
	}
	if rep.KillMoved > failover || rep.KillResumed > failover {
		rep.fail("failover after the SIGKILL: partitions %v, runs %v; want at most %v", rep.KillMoved, rep.KillResumed, failover)
	}
	load.release()
	cfg.Logf("scale: SIGKILL %s: %d runs in flight resumed in %v, %d partitions moved in %v",
		victim.Name, rep.KillInFlight, rep.KillResumed, rep.KillParts, rep.KillMoved)

	// 4. SIGTERM orchestrator-2 mid-run: it hands over and exits 0.
	term, tid := fl.orchs[1], ids[1]
	if err := proc.WaitFor(ctx, settle, "two orchestrators owning 32 partitions each", func() (bool, error) {
		return own.Balanced(ids[1:], 32, 32)
	}); err != nil {
		rep.fail("after the SIGKILL: %v", err)
	}
	tparts, err := burstAt(ctx, load, ev, own, sessions, tid, "t")
	if err != nil {
		return nil, err
	}
	rep.TermParts = len(tparts)
	termed := time.Now()
	if err := term.Signal(syscall.SIGTERM, true); err != nil {
		return nil, err
	}
	if err := proc.WaitFor(ctx, handoverBound+10*time.Second, "the stopped orchestrator's partitions to move", func() (bool, error) {
		moved, at := own.MovedAt(tparts, ids[2:])
		if moved {
			rep.TermMoved = max(at.Sub(termed), time.Millisecond)
		}
		return moved, nil
	}); err != nil {
		rep.fail("after the SIGTERM: %v", err)
	}
	if rep.TermMoved > handoverBound {
		rep.fail("handover after the SIGTERM took %v; want at most %v", rep.TermMoved, handoverBound)
	}
	if err := term.WaitExit(ctx, 15*time.Second); err != nil {
		rep.fail("after the SIGTERM: %v", err)
		if err := term.Kill(ctx); err != nil {
			return nil, err
		}
	}
	gone := time.Now()
	load.release()
	if err := proc.WaitFor(ctx, settle, "the last orchestrator owning every partition", func() (bool, error) {
		return own.Balanced(ids[2:], bus.Partitions, bus.Partitions)
	}); err != nil {
		rep.fail("after the SIGTERM: %v", err)
	}
	rep.TermExitErr = "0"
	if err := term.ExitError(); err != nil {
		rep.TermExitErr = err.Error()
		rep.fail("%s exited with %v after SIGTERM; want 0; its last words:\n%s", term.Name, err, term.Tail(5))
	}
	cfg.Logf("scale: SIGTERM %s: %d partitions moved in %v, exit %s", term.Name, rep.TermParts, rep.TermMoved, rep.TermExitErr)

	// 5. SIGKILL the NATS server leading the input stream; restart it.
	leader, err := fl.inputLeader(ctx)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	down := time.Now()
	if err := leader.Kill(ctx); err != nil {
		return nil, err
	}
	const probeID = "probe-input"
	acked := make(chan error, 1)
	r := rep // not the result: an early return below sets that to nil
	go func() {
		err := load.send(ctx, probeSession, probeID)
		r.InputAcked = time.Since(down)
		acked <- err
	}()
	// A scheduled outage, not a wait for a condition.
	if err := proc.Pause(ctx, 2*time.Second); err != nil {
		return nil, err
	}
	if err := leader.Start(); err != nil {
		return nil, err
	}
	rep.LeaderDown = time.Since(down)
	if err := leader.WaitReady(ctx); err != nil {
		return nil, err
	}
	if err := <-acked; err != nil {
		return nil, fmt.Errorf("chaos: the probe: %w", err)
	}
	if err := proc.WaitFor(ctx, 60*time.Second, "the run of a message sent after the leader's kill to end", func() (bool, error) {
		hist, err := readHistory(ctx, js)
		if err != nil {
			return false, err
		}
		at, ok := endOf(hist, probeSession, probeID)
		if ok {
			rep.InputBack = at.Sub(down)
		}
		return ok, nil
	}); err != nil {
		rep.fail("after the input leader's kill: %v", err)
	}
	if err := fl.waitCluster(ctx); err != nil {
		return nil, err
	}
	rep.LeaseLosses = third.CountLines("lost its lease")
	cfg.Logf("scale: SIGKILL %s (leader of %s, down %v): input acked after %v, its run ended after %v; %s lost its lease %d times",
		leader.Name, inputStream, rep.LeaderDown, rep.InputAcked, rep.InputBack, third.Name, rep.LeaseLosses)

	// 6. Quiesce and check what is stored.
	if err := stopLoad(); err != nil {
		return nil, fmt.Errorf("chaos: the load: %w", err)
	}
	rep.Messages = load.messages()
	if _, err := fl.quiesce(ctx, js, load.plan, 60*time.Second); err != nil {
		rep.fail("quiescing: %v", err)
	}
	var hist []*check.Record
	var ledger []check.LedgerRecord
	// A read may fail while the restarted server catches up: read again.
	if err := proc.WaitFor(ctx, 30*time.Second, "the stored history and ledger", func() (bool, error) {
		var err error
		if hist, err = readHistory(ctx, js); err != nil {
			return false, err
		}
		ledger, err = readLedger(ctx, js)
		return err == nil, err
	}); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	rep.Report = &Report{Findings: check.Verify(load.plan, hist, ledger)}
	for _, v := range rep.Report.Violations {
		if v.Count > 0 {
			rep.fail("%d %s; first: %v", v.Count, v.Class, v.Examples)
		}
	}
	writtenAfter(rep, hist, vid, victim.Name, dead)
	writtenAfter(rep, hist, tid, term.Name, gone)
	rep.TermInFlight, rep.TermHanded = inFlightAt(hist, tid, ids[2], tparts, termed)
	rep.Starts = countsOf(ev.StartsBy(), ids)
	fl.mu.Lock()
	rep.Exits = slices.Clone(fl.exits)
	fl.mu.Unlock()
	rep.Seconds = time.Since(began).Seconds()
	return rep, nil
}
