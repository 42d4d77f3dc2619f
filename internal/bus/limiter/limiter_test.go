package limiter_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/limiter"
	"github.com/agentfleet/agentfleet/internal/quota"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// start returns a limiter of its own connection to srv, closed at the
// test's end.
func start(t *testing.T, srv *server.Server, node string, lim quota.Limits, leaseTTL time.Duration) *limiter.Limiter {
	t.Helper()
	nc := bustest.MustConnect(t, srv)
	l, err := limiter.New(context.Background(), nc, limiter.Config{
		Node: node, Subjects: bus.Subjects{Prefix: "agent"}, LeaseTTL: leaseTTL,
		Models: map[string]limiter.Model{"m": {Endpoint: "e", Limits: lim}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// TestSharedRate: three limiters, each with its own connection and four
// callers that ask as fast as they are granted, share one limit of 10
// requests per second (RPM 600, burst 3): over 4 seconds the fleet gets
// at most 10 per second plus the burst, and no wall-clock second more than
// its share plus the burst (plus one for a second that splits a refill).
func TestSharedRate(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	lim := quota.Limits{RPM: 600}
	var ls []*limiter.Limiter
	for i := range 3 {
		ls = append(ls, start(t, srv, fmt.Sprintf("o%d", i), lim, 0))
	}
	var (
		mu     sync.Mutex
		grants []time.Time
		wg     sync.WaitGroup
	)
	const run = 4 * time.Second
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	for i, l := range ls {
		for j := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					tk, err := l.Admit(ctx, quota.Call{Model: "m", Agent: fmt.Sprintf("a%d", j), Tokens: 10})
					if err != nil {
						return
					}
					mu.Lock()
					grants = append(grants, time.Now())
					mu.Unlock()
					tk.Done(&agentfleet.Usage{InputTokens: 10}, 200, 0)
					_ = i
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(began)
	limit := int(elapsed.Seconds()*10) + 3 + 1
	if len(grants) > limit {
		t.Errorf("%d grants in %v, want at most %d (10/s + burst 3)", len(grants), elapsed, limit)
	}
	if len(grants) < int(run.Seconds()*10)/2 {
		t.Errorf("%d grants in %v: the limiter starves its callers", len(grants), elapsed)
	}
	// Any window of one second holds at most 10 + burst 3.
	for i := range grants {
		n := 0
		for _, g := range grants[i:] {
			if g.Sub(grants[i]) < time.Second {
				n++
			}
		}
		if n > 13+1 {
			t.Errorf("%d grants in the second from %v, want at most 14", n, grants[i].Sub(began))
			break
		}
	}
	t.Logf("%d grants in %v across 3 limiters (limit 10/s)", len(grants), elapsed)
}

// TestPauseIsFleetWide: a 429 with Retry-After reported by one
// orchestrator's ticket holds every orchestrator's next call until it
// ends.
func TestPauseIsFleetWide(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	a := start(t, srv, "a", quota.Limits{}, 0)
	b := start(t, srv, "b", quota.Limits{}, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tk, err := a.Admit(ctx, quota.Call{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(nil, 429, 1500*time.Millisecond)
	paused := time.Now()
	// The waiting call of b says why it waits.
	var waiting []*agentfleet.Event
	var mu sync.Mutex
	notify := func(e *agentfleet.Event) {
		mu.Lock()
		waiting = append(waiting, e)
		mu.Unlock()
	}
	for _, l := range []*limiter.Limiter{b, a} {
		tk, err := l.Admit(ctx, quota.Call{Model: "m", Priority: "batch", Notify: notify})
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(paused); waited < 1400*time.Millisecond {
			t.Errorf("admitted %v after a pause of 1.5s", waited)
		}
		tk.Done(nil, 200, 0)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waiting) == 0 || waiting[0].Type != agentfleet.EventModelWaiting || waiting[0].Reason != quota.ReasonPaused || waiting[0].Model != "m" || waiting[0].Priority != "batch" {
		t.Errorf("model.waiting events %+v, want one with reason paused", waiting)
	}
}

// queueUp admits calls of agent at prio on l one after another in order
// of n, recording the order of their grants. It returns once all are
// queued (each Admit sits in the queue).
func grantOrder(t *testing.T, l *limiter.Limiter, ctx context.Context, calls []quota.Call, order chan<- string) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := l.Admit(ctx, c)
			if err != nil {
				return
			}
			order <- c.Agent + "/" + c.Priority
			tk.Done(nil, 200, 0)
		}()
	}
	return &wg
}

// TestInteractiveFirst: an interactive call that comes after 100 queued
// batch calls goes first.
func TestInteractiveFirst(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	l := start(t, srv, "o", quota.Limits{RPM: 600, Burst: 1}, 0) // one call every 100 ms
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The first call takes the burst, so that the rest queue.
	tk, err := l.Admit(ctx, quota.Call{Model: "m", Agent: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(nil, 200, 0)
	order := make(chan string, 200)
	var batch []quota.Call
	for i := range 100 {
		batch = append(batch, quota.Call{Model: "m", Agent: fmt.Sprintf("b%d", i%5), Priority: "batch"})
	}
	wg := grantOrder(t, l, ctx, batch, order)
	waitQueued(t, l, "batch", 95)
	wg2 := grantOrder(t, l, ctx, []quota.Call{{Model: "m", Agent: "chat", Priority: "interactive"}}, order)
	// At most the call granted while the interactive one queued goes
	// before it.
	for i := 0; ; i++ {
		got := <-order
		if got == "chat/interactive" {
			if i > 1 {
				t.Errorf("the interactive call was granted after %d batch calls", i)
			}
			break
		}
	}
	cancel()
	wg.Wait()
	wg2.Wait()
}

// waitQueued waits until l's queue of model m at prio holds n calls.
func waitQueued(t *testing.T, l *limiter.Limiter, prio string, n int) {
	t.Helper()
	bustest.Eventually(t, fmt.Sprintf("%d %s calls queued", n, prio), func() bool { return l.Queued("m", prio) >= n })
}

// TestFairAcrossAgents: two agents at the same priority, one with 30
// calls queued before the other's 10, get turns: of the first 20 grants
// after both queued, each gets about half.
func TestFairAcrossAgents(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	l := start(t, srv, "o", quota.Limits{RPM: 1200, Burst: 1}, 0) // every 50 ms
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tk, _ := l.Admit(ctx, quota.Call{Model: "m", Agent: "warm"})
	tk.Done(nil, 200, 0)
	order := make(chan string, 100)
	var busy, quiet []quota.Call
	for range 30 {
		busy = append(busy, quota.Call{Model: "m", Agent: "busy", Priority: "batch"})
	}
	for range 10 {
		quiet = append(quiet, quota.Call{Model: "m", Agent: "quiet", Priority: "batch"})
	}
	wg := grantOrder(t, l, ctx, busy, order)
	waitQueued(t, l, "batch", 28)
	wg2 := grantOrder(t, l, ctx, quiet, order)
	waitQueued(t, l, "batch", 36)
	// Skip what went before the quiet agent queued.
	n := map[string]int{}
	for len(order) > 0 {
		<-order
	}
	for range 16 {
		got := <-order
		n[got]++
	}
	if b, q := n["busy/batch"], n["quiet/batch"]; q < 7 || b < 7 {
		t.Errorf("16 grants: busy %d, quiet %d; want about 8 each", b, q)
	}
	cancel()
	wg.Wait()
	wg2.Wait()
}

// TestDeadHolderLosesItsSlot: an orchestrator that stops (dies) holding the
// one concurrency slot frees it when its lease lapses, and its waiting
// interactive call's mark lapses too, so the others' batch calls go.
func TestDeadHolderLosesItsSlot(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	lim := quota.Limits{Concurrent: 1}
	dead := start(t, srv, "dead", lim, 900*time.Millisecond)
	live := start(t, srv, "live", lim, 900*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := dead.Admit(ctx, quota.Call{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	// Its interactive call waits for the slot it holds itself.
	dctx, dcancel := context.WithCancel(ctx)
	go dead.Admit(dctx, quota.Call{Model: "m", Priority: "interactive"})
	waitQueued(t, dead, "interactive", 1)
	dead.Close() // no Done, no renewal: as if killed
	dcancel()
	took := time.Now()
	tk, err := live.Admit(ctx, quota.Call{Model: "m", Priority: "batch"})
	if err != nil {
		t.Fatal(err)
	}
	tk.Done(nil, 200, 0)
	t.Logf("the slot of the dead orchestrator came back after %v", time.Since(took))
}

// TestHostileState: a value in the quota bucket that is not a state (or
// a state with absurd numbers) does not stop the limiter: it is taken as a
// fresh state and overwritten.
func TestHostileState(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	l := start(t, srv, "o", quota.Limits{RPM: 60, Concurrent: 2}, 0)
	nc := bustest.MustConnect(t, srv)
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), "AGENT_QUOTA")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range []string{"not json", `{"at":1,"req":"x"}`, `{"at":9e30,"req":-1e308,"held":{"a":9e18,"b":9e18}}`, string(make([]byte, 1000))} {
		if _, err := kv.Put(ctx, limiter.Key("e", "m"), []byte(v)); err != nil {
			t.Fatal(err)
		}
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		tk, err := l.Admit(actx, quota.Call{Model: "m"})
		acancel()
		if err != nil {
			// The absurd but well-formed state holds the slots; that it
			// blocks is the limit working, and it must end with ctx.
			if v[0] == '{' && len(v) > 20 {
				continue
			}
			t.Fatalf("state %q: %v", v, err)
		}
		tk.Done(nil, 200, 0)
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct{ ep, model, want string }{
		{"openai", "gpt-4o-mini", "m.openai.gpt-4o-mini"},
		{"e", "org/model:v1.2", "m.e.org_2Fmodel_3Av1_2E2"},
		{"e", "", "m.e._"},
		{"a_b", "x y", "m.a_5Fb.x_20y"},
	} {
		if got := limiter.Key(tc.ep, tc.model); got != tc.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.ep, tc.model, got, tc.want)
		}
	}
}
