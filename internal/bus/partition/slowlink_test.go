package partition_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/agentfleet/agentfleet/internal/chaos/netproxy"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLeaseHoldsOverASlowLink puts 400 ± 130 ms each way between a member
// and NATS (a cross-region link, round trips of 0.54 s to 1.06 s against a
// 2 s lease renewed every 0.67 s) for ten renewals: renewals wait for their
// late answers and follow each other, and a renewal given up on that was
// stored all the same is recognised, so the lease is never lost and the
// member keeps its partitions.
func TestLeaseHoldsOverASlowLink(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	link, err := netproxy.Listen(strings.TrimPrefix(srv.ClientURL(), "nats://"), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	nc, err := bus.Connect(bus.ConnectConfig{URL: "nats://" + link.Addr(), Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	subjects, _ := bus.NewSubjects("")
	var held, lost, released atomic.Int32
	tb, err := partition.New(context.Background(), js, subjects, "far", partition.Config{
		Count: 4, TTL: 2 * time.Second,
		Acquire: func(context.Context, int) error { held.Add(1); return nil },
		Release: func(int) { released.Add(1) },
		Lost:    func(error) { lost.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the member to own its 4 partitions", func() bool { return held.Load() == 4 })

	// Watch the member key on a direct connection: each update is a
	// renewal the server stored.
	direct := bustest.MustConnect(t, srv)
	djs, _ := jetstream.New(direct)
	kv, err := djs.KeyValue(context.Background(), subjects.StreamName("MEMBERS"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(context.Background(), "far", jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := link.Set(netproxy.Mode{Latency: 400 * time.Millisecond, Jitter: 130 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(40 * time.Second)
	for renewals := 0; renewals < 10; {
		select {
		case e := <-w.Updates():
			if e == nil {
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				t.Fatalf("the member key was %v after %d renewals over the slow link: the lease lapsed", e.Operation(), renewals)
			}
			renewals++
		case <-timeout:
			t.Fatalf("%d renewals stored in 40s over the slow link, want 10", renewals)
		}
	}
	if n := lost.Load(); n != 0 {
		t.Errorf("the lease was lost %d times over the slow link", n)
	}
	if n := released.Load(); n != 0 {
		t.Errorf("%d partitions released over the slow link", n)
	}
	if got := len(tb.Owned()); got != 4 {
		t.Errorf("owns %d partitions after the slow link, want 4", got)
	}
	if err := link.Set(netproxy.Mode{}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Leave(); err != nil {
		t.Error(err)
	}
}

// TestOwnsWhileInDoubt cuts a member off (a blackhole: its connection open,
// nothing moving) until its lease is in doubt: it still owns its
// partitions, so that input it takes waits instead of being handed back
// behind later input; writes wait (Valid fails). It still hands out the
// fence of each partition's claim, which waits (an error that can pass) and
// holds again with the lease: a session that comes into memory in the doubt
// must not get the fence of epoch 0, which never holds. Healed before the
// key expires, the lease holds again. Cut off past the TTL, it finds the
// lease lost once healed, owns nothing and hands out no fence.
func TestOwnsWhileInDoubt(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	link, err := netproxy.Listen(strings.TrimPrefix(srv.ClientURL(), "nats://"), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	nc, err := bus.Connect(bus.ConnectConfig{URL: "nats://" + link.Addr(), Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	subjects, _ := bus.NewSubjects("")
	var held, lost atomic.Int32
	lostc := make(chan struct{}, 1)
	tb, err := partition.New(context.Background(), js, subjects, "cut", partition.Config{
		Count: 2, TTL: 3 * time.Second,
		Acquire: func(context.Context, int) error { held.Add(1); return nil },
		Release: func(int) {},
		Lost:    func(error) { lost.Add(1); lostc <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the member to own its 2 partitions", func() bool { return held.Load() == 2 })

	if err := link.Set(netproxy.Mode{Blackhole: true}); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the lease in doubt", func() bool { return errors.Is(tb.Valid(), partition.ErrInDoubt) })
	var fences []ownership.Fence
	for p := range 2 {
		if !tb.Owns(p) {
			t.Errorf("partition %d not owned while the lease is only in doubt", p)
		}
		f, ok := tb.Fence(p)
		if !ok || f.Epoch == 0 {
			t.Errorf("partition %d: fence %v, %v while the lease is only in doubt, want its claim's", p, f, ok)
		}
		var fe *ownership.FencedError
		if err := tb.Check(f); !errors.Is(err, partition.ErrInDoubt) || errors.As(err, &fe) {
			t.Errorf("partition %d: the fence handed out in the doubt checks %v, want the doubt", p, err)
		}
		fences = append(fences, f)
	}
	if err := link.Set(netproxy.Mode{}); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the lease to hold again", func() bool { return tb.Valid() == nil })
	for _, f := range fences {
		if err := tb.Check(f); err != nil {
			t.Errorf("the fence %v handed out in the doubt does not hold with the lease: %v", f, err)
		}
	}
	if n := lost.Load(); n != 0 {
		t.Fatalf("lease lost %d times by a cut shorter than the TTL", n)
	}

	// Past the TTL the key expires; once healed the member finds it gone.
	direct := bustest.MustConnect(t, srv)
	djs, _ := jetstream.New(direct)
	kv, err := djs.KeyValue(context.Background(), subjects.StreamName("MEMBERS"))
	if err != nil {
		t.Fatal(err)
	}
	if err := link.Set(netproxy.Mode{Blackhole: true}); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the member key to expire", func() bool {
		_, err := kv.Get(context.Background(), "cut")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	if err := link.Set(netproxy.Mode{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lostc:
	case <-time.After(15 * time.Second):
		t.Fatal("the lease was not found lost after the key expired")
	}
	for p := range 2 {
		if tb.Owns(p) {
			t.Errorf("partition %d still owned after the lease was lost", p)
		}
		if f, ok := tb.Fence(p); ok {
			t.Errorf("partition %d: fence %v handed out after the lease was lost", p, f)
		}
	}
	tb.Leave()
}
