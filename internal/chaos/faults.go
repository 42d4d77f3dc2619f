package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos/proc"
)

// FaultKind is a kind of fault the harness injects.
type FaultKind string

// The faults. Each is followed by a restart of what it hit, and the next
// fault waits until the fleet is ready again.
const (
	// FaultKillWorker SIGKILLs a toolworker or the ledger worker.
	FaultKillWorker FaultKind = "kill-worker"
	// FaultKillOrchestrator SIGKILLs a serving orchestrator (one that
	// printed "orchestrator serving"), chosen by the seed.
	FaultKillOrchestrator FaultKind = "kill-orchestrator"
	// FaultTermOrchestrator SIGTERMs a serving orchestrator (a graceful
	// stop with a short --shutdown-timeout).
	FaultTermOrchestrator FaultKind = "term-orchestrator"
	// FaultKillNATS SIGKILLs a NATS server (in a cluster, one chosen by
	// the seed) and restarts it on the same store and ports.
	FaultKillNATS FaultKind = "kill-nats"
	// FaultPause SIGSTOPs a serving orchestrator for twice the lease (or
	// leader) TTL, and until a standby took over if there was one, then
	// SIGCONTs it. Two orchestrators or more.
	FaultPause FaultKind = "pause-orchestrator"
	// FaultKillNATSLeader SIGKILLs the NATS server that leads the input
	// stream and restarts it after a seeded delay (0.5s to 3s) while the
	// other two elect a new leader. A cluster only.
	FaultKillNATSLeader FaultKind = "kill-nats-leader"
	// FaultBlackhole holds every byte between a serving orchestrator and
	// NATS, both ways, its connections open (a partition), for a seeded
	// 2 to 4 lease TTLs and until a standby took over if there was one,
	// then heals the link.
	FaultBlackhole FaultKind = "blackhole-orchestrator"
	// FaultSlow adds 400 ± 130 ms each way between a serving orchestrator
	// and NATS (a cross-region link) for a seeded 4s to 8s.
	FaultSlow FaultKind = "slow-orchestrator"
)

// AllFaultKinds lists every kind, in a fixed order.
var AllFaultKinds = []FaultKind{FaultKillWorker, FaultKillOrchestrator, FaultTermOrchestrator, FaultKillNATS, FaultPause, FaultKillNATSLeader,
	FaultBlackhole, FaultSlow}

func (k FaultKind) valid() bool { return slices.Contains(AllFaultKinds, k) }

// Fault is one fault, planned and then injected.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// AtSec is when it was planned, since the load began; InjectedSec
	// when it was injected (later when the fleet was still recovering from
	// the previous one).
	AtSec       float64 `json:"at_s"`
	InjectedSec float64 `json:"injected_s"`
	// Target is the process it hit.
	Target string `json:"target"`
	// ReadySec is how long after the fault the process was back and ready
	// (and an orchestrator served).
	ReadySec float64 `json:"ready_s"`
	// RecoverySec is how long after the fault the first run ended that was
	// stored after the fleet was ready again; negative when none did.
	RecoverySec float64 `json:"recovery_s"`
	// Note says anything unusual: a stop that needed a SIGKILL, a paused
	// orchestrator that did not step down.
	Note string `json:"note,omitempty"`
	// HeldSec is how long a network fault held its link (from the fault
	// to the heal); RunsDuring the runs its orchestrator ended meanwhile,
	// RunsPerSec their rate, RunsPerSecBefore its rate before the fault.
	HeldSec          float64 `json:"held_s,omitempty"`
	RunsDuring       int     `json:"runs_during,omitempty"`
	RunsPerSec       float64 `json:"runs_per_s,omitempty"`
	RunsPerSecBefore float64 `json:"runs_per_s_before,omitempty"`
	// RunsBegun are the runs it began meanwhile (RunsBegunOpen of them
	// never ended, whoever finished them), with the median time from
	// their first record to their end, and the same before the fault.
	RunsBegun          int     `json:"runs_begun,omitempty"`
	RunsBegunOpen      int     `json:"runs_begun_open,omitempty"`
	MedianRunSec       float64 `json:"median_run_s,omitempty"`
	MedianRunSecBefore float64 `json:"median_run_s_before,omitempty"`

	at       time.Duration
	target   int           // index among the candidates of its kind
	node     int           // index of the NATS server, in a cluster
	down     time.Duration // how long a killed NATS leader stays down
	hold     time.Duration // how long a network fault lasts
	injected time.Time
	healed   time.Time // when a network fault's link was healed
	ready    time.Time
}

// scheduleFaults plans cfg.Faults faults over the middle of the load: one
// per slot of [10%, 90%] of Duration at a random point of its slot, the
// kinds dealt so that each configured kind comes up once before any comes
// up twice.
func scheduleFaults(cfg *Config, rng *rand.Rand) []*Fault {
	n := max(cfg.Faults, 0)
	var deck []FaultKind
	faults := make([]*Fault, 0, n)
	slot := cfg.Duration * 8 / 10 / time.Duration(max(n, 1))
	for i := range n {
		if len(deck) == 0 {
			deck = slices.Clone(cfg.FaultKinds)
			rng.Shuffle(len(deck), func(a, b int) { deck[a], deck[b] = deck[b], deck[a] })
		}
		k := deck[0]
		deck = deck[1:]
		at := cfg.Duration/10 + time.Duration(i)*slot + time.Duration(rng.Int64N(int64(slot)+1))
		ft := &Fault{Kind: k, at: at, AtSec: at.Seconds(), target: rng.IntN(cfg.Workers + 1)}
		// Draws a single server does not need come only with a cluster,
		// so that the plans of one server stay what they were.
		if cfg.NATSNodes > 1 {
			ft.node = rng.IntN(cfg.NATSNodes)
			ft.down = 500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond)))
		}
		// Only network faults draw their length, so that plans without
		// them stay what they were.
		if k == FaultBlackhole || k == FaultSlow {
			ft.hold = netHold(cfg, k, rng.Float64())
		}
		faults = append(faults, ft)
	}
	return faults
}

// inject runs the fault schedule from loadStart, supervising the fleet in
// between, and returns the faults as injected.
func (f *fleet) inject(ctx context.Context, faults []*Fault, loadStart time.Time) ([]*Fault, error) {
	var done []*Fault
	f.since = loadStart
	for _, ft := range faults {
		if err := f.superviseUntil(ctx, loadStart.Add(ft.at), loadStart); err != nil {
			return done, err
		}
		if err := f.injectOne(ctx, ft, loadStart); err != nil {
			return done, fmt.Errorf("%s: %w", ft.Kind, err)
		}
		done = append(done, ft)
		f.cfg.Logf("chaos: %6.2fs %s %s: ready after %.2fs %s", ft.InjectedSec, ft.Kind, ft.Target, ft.ReadySec, ft.Note)
	}
	return done, nil
}

// superviseUntil restarts processes that exit on their own until the time
// until comes.
func (f *fleet) superviseUntil(ctx context.Context, until, since time.Time) error {
	for {
		if err := f.supervise(ctx, since); err != nil {
			return err
		}
		d := time.Until(until)
		if d <= 0 {
			return nil
		}
		if err := proc.Pause(ctx, min(d, 200*time.Millisecond)); err != nil {
			return err
		}
	}
}

// injectOne injects one fault and waits until the fleet is ready again.
func (f *fleet) injectOne(ctx context.Context, ft *Fault, loadStart time.Time) error {
	var target *proc.Proc
	switch ft.Kind {
	case FaultKillWorker:
		target = f.workers[ft.target%len(f.workers)]
	case FaultKillNATS:
		target = f.nodes[ft.node%len(f.nodes)].Proc
	case FaultKillNATSLeader:
		n, err := f.inputLeader(ctx)
		if err != nil {
			return err
		}
		target = n.Proc
		ft.Note = fmt.Sprintf("leader of %s; down %.2fs", inputStream, ft.down.Seconds())
	default:
		if err := f.waitServing(ctx); err != nil {
			return err
		}
		serving := f.serving()
		target = serving[ft.target%len(serving)]
	}
	ft.Target = target.Name
	ft.injected = time.Now()
	ft.InjectedSec = ft.injected.Sub(loadStart).Seconds()
	switch ft.Kind {
	case FaultKillWorker, FaultKillOrchestrator, FaultKillNATS:
		if err := target.Kill(ctx); err != nil {
			return err
		}
		if err := target.Start(); err != nil {
			return err
		}
	case FaultKillNATSLeader:
		if err := target.Kill(ctx); err != nil {
			return err
		}
		if err := f.superviseUntil(ctx, time.Now().Add(ft.down), loadStart); err != nil {
			return err
		}
		if err := target.Start(); err != nil {
			return err
		}
	case FaultTermOrchestrator:
		if err := target.Signal(syscall.SIGTERM, true); err != nil {
			return err
		}
		if err := target.WaitExit(ctx, 15*time.Second); err != nil {
			ft.Note = "did not stop within 15s of SIGTERM; killed"
			if err := target.Kill(ctx); err != nil {
				return err
			}
		}
		if err := target.Start(); err != nil {
			return err
		}
	case FaultBlackhole, FaultSlow:
		if err := f.injectNet(ctx, ft, slices.Index(f.orchs, target), target, loadStart); err != nil {
			return err
		}
	case FaultPause:
		// Standbys: orchestrators that do not serve now; with an elected
		// active orchestrator, one of them takes over. When all serve
		// (partitions leased by each), the others take the paused one's
		// partitions over once its leases expire, which the harness
		// cannot see: it holds the stop past them.
		var standbys []*proc.Proc
		for _, p := range f.orchs {
			if p != target && !p.IsMarked() {
				standbys = append(standbys, p)
			}
		}
		if err := target.Signal(syscall.SIGSTOP, false); err != nil {
			return err
		}
		hold := 2 * f.cfg.ttl()
		werr := f.superviseUntil(ctx, time.Now().Add(hold), loadStart)
		if werr == nil && len(standbys) > 0 {
			werr = proc.WaitFor(ctx, 3*f.cfg.ttl()+10*time.Second, "a standby to take over", func() (bool, error) {
				return slices.ContainsFunc(standbys, (*proc.Proc).IsMarked), nil
			})
			if werr != nil && ctx.Err() == nil {
				ft.Note = "no standby took over"
				werr = nil
			}
		}
		if err := target.Signal(syscall.SIGCONT, false); err != nil {
			return err
		}
		if werr != nil {
			return werr
		}
		if ft.Note == "" && len(standbys) > 0 {
			// Stepped down, it stands by in the same process.
			if err := proc.WaitFor(ctx, 3*f.cfg.ttl()+5*time.Second, "the paused orchestrator to step down", func() (bool, error) {
				return !target.IsMarked(), nil
			}); err != nil {
				ft.Note = "the paused orchestrator did not step down after it resumed"
			}
		}
	}
	if err := f.waitAllReady(ctx); err != nil {
		return err
	}
	ft.ready = time.Now()
	ft.ReadySec = ft.ready.Sub(ft.injected).Seconds()
	return nil
}
