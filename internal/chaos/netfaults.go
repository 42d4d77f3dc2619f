package chaos

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/netproxy"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
)

// slowLink is the latency of FaultSlow, each way: a cross-region link.
var slowLink = netproxy.Mode{Latency: 400 * time.Millisecond, Jitter: 130 * time.Millisecond}

// netHold draws how long a network fault lasts: a blackhole from twice to
// four times the lease TTL (past the lease, so that the others take the
// orchestrator's sessions over), a slow link 4s to 8s.
func netHold(cfg *Config, k FaultKind, u float64) time.Duration {
	switch k {
	case FaultBlackhole:
		return 2*cfg.ttl() + time.Duration(u*float64(2*cfg.ttl()))
	case FaultSlow:
		return 4*time.Second + time.Duration(u*float64(4*time.Second))
	}
	return 0
}

// setLinks puts every link of orchestrator i in mode m.
func (f *fleet) setLinks(i int, m netproxy.Mode) error {
	for _, p := range f.links[i] {
		if err := p.Set(m); err != nil {
			return err
		}
	}
	return nil
}

// injectNet injects a blackhole or a slow link on the links of target
// (orchestrator i) for ft.hold, then heals them. A blackhole waits, like a
// pause, until a standby took over if there is one.
func (f *fleet) injectNet(ctx context.Context, ft *Fault, i int, target *proc.Proc, loadStart time.Time) error {
	m := slowLink
	if ft.Kind == FaultBlackhole {
		m = netproxy.Mode{Blackhole: true}
	}
	var standbys []*proc.Proc
	for _, p := range f.orchs {
		if p != target && !p.IsMarked() {
			standbys = append(standbys, p)
		}
	}
	if err := f.setLinks(i, m); err != nil {
		return err
	}
	ft.HeldSec = ft.hold.Seconds()
	werr := f.superviseUntil(ctx, time.Now().Add(ft.hold), loadStart)
	if werr == nil && ft.Kind == FaultBlackhole && len(standbys) > 0 {
		werr = proc.WaitFor(ctx, 3*f.cfg.ttl()+10*time.Second, "a standby to take over", func() (bool, error) {
			return slices.ContainsFunc(standbys, (*proc.Proc).IsMarked), nil
		})
		if werr != nil && ctx.Err() == nil {
			ft.Note = "no standby took over"
			werr = nil
		}
	}
	ft.healed = time.Now()
	if err := f.setLinks(i, netproxy.Mode{}); err != nil {
		return err
	}
	return werr
}

// servingID matches the instance id of an "orchestrator serving" line.
var servingID = regexp.MustCompile(`msg="orchestrator serving".* id=(\S+)`)

// writerIDs returns the instance ids the orchestrator logged as serving
// (one per start), the Agentfleet-Writer of what it stored.
func writerIDs(p *proc.Proc) []string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return nil
	}
	var ids []string
	for _, m := range servingID.FindAllStringSubmatch(string(b), -1) {
		if !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// linkThroughput fills in, for every network fault, the run ends the
// target stored while the fault lasted, and their rate; and the same
// orchestrator's rate over the rest of the load, for comparison.
func (f *fleet) linkThroughput(faults []*Fault, recs []*check.Record, loadStart time.Time) {
	for _, ft := range faults {
		if ft.Kind != FaultSlow && ft.Kind != FaultBlackhole || ft.healed.IsZero() {
			continue
		}
		i := slices.IndexFunc(f.orchs, func(p *proc.Proc) bool { return p.Name == ft.Target })
		if i < 0 {
			continue
		}
		ids := writerIDs(f.orchs[i])
		during, before := 0, 0
		for _, r := range recs {
			if !r.End || !slices.Contains(ids, r.Writer) {
				continue
			}
			switch {
			case !r.Time.Before(ft.injected) && r.Time.Before(ft.healed):
				during++
			case r.Time.Before(ft.injected) && !r.Time.Before(loadStart):
				before++
			}
		}
		ft.RunsDuring = during
		ft.RunsPerSec = float64(during) / ft.healed.Sub(ft.injected).Seconds()
		if d := ft.injected.Sub(loadStart).Seconds(); d > 0 {
			ft.RunsPerSecBefore = float64(before) / d
		}
		took, open := check.RunDurations(recs, ids, ft.injected, ft.healed)
		base, _ := check.RunDurations(recs, ids, loadStart, ft.injected)
		ft.RunsBegun, ft.RunsBegunOpen, ft.MedianRunSec, ft.MedianRunSecBefore = len(took)+open, open, median(took), median(base)
		ft.Note = strings.TrimSpace(ft.Note + fmt.Sprintf(" %s: %d runs ended by it in %.1fs (%.2f/s; %.2f/s before); %d begun, %d unended, median %.1fs (%.1fs before)",
			ft.Kind, during, ft.healed.Sub(ft.injected).Seconds(), ft.RunsPerSec, ft.RunsPerSecBefore, ft.RunsBegun, open, ft.MedianRunSec, ft.MedianRunSecBefore))
	}
}

func median(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	return ds[len(ds)/2].Seconds()
}
