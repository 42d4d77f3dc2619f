package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// TestSessionTakenInWhileTheLeaseIsInDoubt takes a session into memory
// while its orchestrator's lease is in doubt (its link stalled, renewals
// unanswered, its key not yet expired). The orchestrator still owns every
// partition then, and takes their input, so the session must come with the
// fence of its partition's claim, which holds again with the lease. It came
// with the fence of epoch 0, which never holds: once the link was back, its
// first run was suspended at its first write and an ask of it was never
// answered (found by the fault test, seeds 1434 and 1446: a child session
// of an ask tool loaded in a moment of doubt, and its parent's call never
// got a result).
func TestSessionTakenInWhileTheLeaseIsInDoubt(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	px := startStallProxy(t, srv.Addr().String())
	nc, err := bus.Connect(bus.ConnectConfig{URL: px.url()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var lost atomic.Int32
	model := newScript().on("doubt", say("answered"))
	// A long lease: the doubt begins 0.8 TTL after the last renewal, the
	// key expires a TTL after it, so the stall has 1.6 s to spare.
	o, err := orchestrator.New(nc, orchestrator.Config{Model: model, Durable: true, LeaseTTL: 8 * time.Second,
		Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}, OnLeaseLost: func() { lost.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o.Close(context.Background())
	bustest.Eventually(t, "the orchestrator to own every partition", func() bool { return len(o.Partitions()) == bus.Partitions })

	px.set(true)
	bustest.Eventually(t, "the lease in doubt", func() bool { return errors.Is(orchestrator.LeaseOf(o), partition.ErrInDoubt) })
	loaded := make(chan error, 1)
	go func() {
		_, err := o.Session("default", "doubt")
		loaded <- err
	}()
	bustest.Eventually(t, "the session in memory", func() bool { return o.Sessions() == 1 })
	px.set(false)
	bustest.Eventually(t, "the lease to hold again", func() bool { return orchestrator.LeaseOf(o) == nil })
	if lost.Load() != 0 {
		t.Fatal("the lease was lost: the stall outlasted it, and the session came into memory with no lease at all")
	}
	select {
	case err := <-loaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the session never loaded")
	}
	reply, err := bustest.MustConnect(t, srv).Request("agent.ask.default.doubt", []byte(`{"content":"hi","id":"q1"}`), 10*time.Second)
	if err != nil {
		t.Fatalf("the ask of a session taken in while the lease was in doubt: %v", err)
	}
	if !strings.Contains(string(reply.Data), "answered") {
		t.Errorf("answer = %s", reply.Data)
	}
}

// TestSessionTakenInBeforeItsPartitionIsClaimed takes a session into the
// memory of an orchestrator that does not own its partition (here through
// Session; under faults by a load of a partition's pending sessions that
// goes on after the partition was handed over or the lease lost), so with
// the fence of epoch 0. Once that orchestrator claims the partition, the
// session is taken in afresh under the claim's fence and answers; it stayed
// in memory with its dead fence, and the ask was never answered.
func TestSessionTakenInBeforeItsPartitionIsClaimed(t *testing.T) {
	first, second := newScript(), newScript()
	f := startFleet(t, orchestrator.Config{Model: first, Durable: true, LeaseTTL: time.Second})
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: second, Durable: true, LeaseTTL: time.Second,
		Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
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
	name := ""
	for i := 0; name == ""; i++ {
		if n := fmt.Sprintf("s%d", i); slices.Contains(o2.Partitions(), bus.Partition("default", n)) {
			name = n
		}
	}
	first.on(name, say("answered by the first"))
	if _, err := f.orch.Session("default", name); err != nil {
		t.Fatal(err)
	}
	if err := o2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the first to own every partition", func() bool { return len(f.orch.Partitions()) == bus.Partitions })
	if got := agentfleet.JoinText(f.ask(t, "default", name, `{"content":"hi","id":"q1"}`).Content); got != "answered by the first" {
		t.Errorf("answer = %q", got)
	}
}
