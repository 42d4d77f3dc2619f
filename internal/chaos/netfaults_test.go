package chaos

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestNetHold(t *testing.T) {
	cfg := &Config{LeaseTTL: 2 * time.Second, LeaderTTL: time.Second}
	for _, tc := range []struct {
		kind FaultKind
		u    float64
		want time.Duration
	}{
		{FaultBlackhole, 0, 4 * time.Second}, // twice the lease: past it
		{FaultBlackhole, 1, 8 * time.Second},
		{FaultSlow, 0, 4 * time.Second},
		{FaultSlow, 0.5, 6 * time.Second},
		{FaultKillWorker, 0.5, 0},
	} {
		if got := netHold(cfg, tc.kind, tc.u); got != tc.want {
			t.Errorf("netHold(%s, %v) = %v, want %v", tc.kind, tc.u, got, tc.want)
		}
	}
}

// TestPlansWithoutNetFaultsKeepTheirDraws checks that the network faults
// draw their length only when dealt: a deck without them plans what it
// planned before they existed (the same faults from the same seed as a
// schedule that never draws a length).
func TestPlansWithoutNetFaultsKeepTheirDraws(t *testing.T) {
	cfg := &Config{Faults: 6, Duration: 15 * time.Second, Workers: 2, NATSNodes: 1, LeaseTTL: 2 * time.Second,
		FaultKinds: []FaultKind{FaultKillWorker, FaultKillOrchestrator, FaultKillNATS}}
	a := scheduleFaults(cfg, rand.New(rand.NewPCG(5, 5)))
	for _, f := range a {
		if f.hold != 0 {
			t.Errorf("%s drew a length of %v", f.Kind, f.hold)
		}
	}
	cfg.FaultKinds = append(cfg.FaultKinds, FaultBlackhole, FaultSlow)
	b := scheduleFaults(cfg, rand.New(rand.NewPCG(5, 5)))
	var kinds []FaultKind
	for _, f := range b {
		kinds = append(kinds, f.Kind)
		if (f.Kind == FaultBlackhole || f.Kind == FaultSlow) && f.hold < 4*time.Second {
			t.Errorf("%s lasts %v, want 4s or more", f.Kind, f.hold)
		}
	}
	if !slices.Contains(kinds, FaultBlackhole) || !slices.Contains(kinds, FaultSlow) {
		t.Errorf("a deck of 5 kinds dealt 6 times is %v: each kind comes up once first", kinds)
	}
}
