package orchestrator_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// partitionGauge is an Observer that keeps what an orchestrator last
// reported as the partitions it owns, as the agentfleet_partitions_owned
// gauge does.
type partitionGauge struct {
	mu  sync.Mutex
	n   int
	set bool
}

func (g *partitionGauge) Event(*agentfleet.Event) {}
func (g *partitionGauge) Input(string)            {}
func (g *partitionGauge) ToolAttempt(_, _ string) {}
func (g *partitionGauge) PartitionsOwned(n int)   { g.mu.Lock(); g.n, g.set = n, true; g.mu.Unlock() }
func (g *partitionGauge) get() (n int, set bool)  { g.mu.Lock(); defer g.mu.Unlock(); return g.n, g.set }

// TestPartitionGaugesSumToTheTable runs two orchestrators: once the second
// has taken its share, the gauges of the two say 32 and 32, what each owns,
// never 33 for the one that handed 32 partitions over (its gauge was set
// while the last of them was still counted, and stayed so until its next
// change). When the first stops, the second's says 64.
func TestPartitionGaugesSumToTheTable(t *testing.T) {
	g1, g2 := &partitionGauge{}, &partitionGauge{}
	f := startFleet(t, orchestrator.Config{Model: newScript(), Durable: true, LeaseTTL: time.Second, Observer: g1},
		toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	bustest.Eventually(t, "the first to own every partition", func() bool {
		n, _ := g1.get()
		return n == bus.Partitions
	})
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: newScript(), Durable: true, LeaseTTL: time.Second,
		Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}, Observer: g2})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
	bustest.Eventually(t, "32 partitions each", func() bool {
		return len(f.orch.Partitions()) == 32 && len(o2.Partitions()) == 32
	})
	// The tables are settled: no callback is left to set a gauge, so the
	// gauges must say what the tables say now.
	bustest.Eventually(t, "the gauges to say 32 and 32", func() bool {
		n1, _ := g1.get()
		n2, _ := g2.get()
		return n1 == 32 && n2 == 32
	})
	if err := f.orch.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the second's gauge to say 64", func() bool {
		n, _ := g2.get()
		return n == bus.Partitions
	})
	if n, _ := g1.get(); n != 0 {
		t.Errorf("the stopped orchestrator's gauge says %d partitions, want 0", n)
	}
}
