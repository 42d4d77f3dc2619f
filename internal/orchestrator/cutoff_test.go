package orchestrator_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// stallProxy forwards TCP connections to a NATS server and can stall them:
// while stalled it reads what either side sends and holds it, with the
// connections kept open (a link that went silent, not one that broke), and
// sends what it holds once resumed.
type stallProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
	// watch, when set, is looked for in what the proxy reads; seen is
	// closed once it was.
	watch []byte
	seen  chan struct{}
}

// await returns a channel closed once the proxy has read b from either
// side (within one read).
func (p *stallProxy) await(b string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watch, p.seen = []byte(b), make(chan struct{})
	return p.seen
}

func startStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln}
	p.cond = sync.NewCond(&p.mu)
	t.Cleanup(func() { ln.Close(); p.set(false) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go p.pipe(c, s)
			go p.pipe(s, c)
		}
	}()
	return p
}

func (p *stallProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *stallProxy) set(stalled bool) {
	p.mu.Lock()
	p.stalled = stalled
	p.mu.Unlock()
	p.cond.Broadcast()
}

// pipe copies from src to dst: it reads all the time, and holds what it
// read while the proxy stalls.
func (p *stallProxy) pipe(dst, src net.Conn) {
	var queue [][]byte
	done := false
	go func() {
		defer dst.Close()
		for {
			p.mu.Lock()
			for !done && (p.stalled || len(queue) == 0) {
				p.cond.Wait()
			}
			if len(queue) == 0 {
				p.mu.Unlock()
				return
			}
			chunk := queue[0]
			queue = queue[1:]
			p.mu.Unlock()
			if _, err := dst.Write(chunk); err != nil {
				src.Close()
				return
			}
		}
	}()
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		p.mu.Lock()
		if n > 0 {
			if p.watch != nil && bytes.Contains(buf[:n], p.watch) {
				close(p.seen)
				p.watch = nil
			}
			queue = append(queue, buf[:n])
		}
		if err != nil {
			done = true
		}
		p.mu.Unlock()
		p.cond.Broadcast()
		if err != nil {
			return
		}
	}
}

// TestCutOffOwnerCallRefusedByWorker cuts an orchestrator off from NATS
// (its connection stalls, TCP kept open) past its lease, while one of its
// sessions is about to send a tool call (held in a Before hook). The other
// orchestrator takes the partition over and runs a call of another session
// of that partition on the worker. Then the cut-off owner's call goes out,
// and the link comes back: the worker refuses the call as fenced, and no
// execution of the tool comes from the deposed owner.
func TestCutOffOwnerCallRefusedByWorker(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	var mu sync.Mutex
	var executed []ownership.Fence
	ran := make(chan ownership.Fence, 64)
	fenced := make(chan struct{}, 64)
	effect := tool("effect", true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		caller, _ := toolrpc.CallerFrom(ctx)
		mu.Lock()
		executed = append(executed, caller.Fence)
		mu.Unlock()
		ran <- caller.Fence
		return agentfleet.TextResult("done"), nil
	})
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{
		Tools: []*agentfleet.Tool{effect}, Heartbeat: 100 * time.Millisecond,
		Observe: func(_, outcome string, _ time.Duration) {
			if outcome == "fenced" {
				fenced <- struct{}{}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce sync.Once
	var held1 atomic.Value // the cut-off owner's session
	held1.Store("")
	before := func(ctx context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
		if in.Session == held1.Load().(string) {
			holdOnce.Do(func() {
				close(held)
				<-release
			})
		}
		return nil, nil
	}
	modelA, modelB := newScript(), newScript()
	px := startStallProxy(t, srv.Addr().String())
	ncA, err := bus.Connect(bus.ConnectConfig{URL: px.url()})
	if err != nil {
		t.Fatal(err)
	}
	defer ncA.Close()
	cfg := func(m *script) orchestrator.Config {
		return orchestrator.Config{Model: m, Durable: true, LeaseTTL: time.Second, Before: before,
			Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}}
	}
	a, err := orchestrator.New(ncA, cfg(modelA))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	bustest.Eventually(t, "the first orchestrator to own every partition", func() bool { return len(a.Partitions()) == bus.Partitions })
	b, err := orchestrator.New(bustest.MustConnect(t, srv), cfg(modelB))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	bustest.Eventually(t, "32 partitions each", func() bool { return len(a.Partitions()) == 32 && len(b.Partitions()) == 32 })

	// Two sessions of one partition that the first orchestrator owns.
	owned := a.Partitions()
	var victim, other string
	for i := 0; victim == "" || other == ""; i++ {
		name := fmt.Sprintf("s%d", i)
		p := bus.Partition("default", name)
		switch {
		case !slices.Contains(owned, p):
		case victim == "":
			victim = name
		case p == bus.Partition("default", victim):
			other = name
		}
	}
	part := bus.Partition("default", victim)
	held1.Store(victim)
	modelA.on(victim, use(`effect {}`), sayResults())
	modelB.on(victim, sayResults(), sayResults())
	modelB.on(other, use(`effect {}`), sayResults())

	publish(t, bustest.MustConnect(t, srv), "agent.in.default."+victim, "", `{"content":"go","id":"u1"}`)
	<-held // the owner's call is about to go out
	px.set(true)
	bustest.Eventually(t, "the second orchestrator to take the partition over", func() bool { return slices.Contains(b.Partitions(), part) })
	publish(t, bustest.MustConnect(t, srv), "agent.in.default."+other, "", `{"content":"go","id":"u2"}`)
	newOwner := <-ran // the new owner's call ran, with its fence
	if newOwner.Partition != part || newOwner.Epoch == 0 {
		t.Fatalf("the new owner's call ran with fence %v, want one of partition %d", newOwner, part)
	}
	// The deposed owner's call goes out, into the stalled link, before
	// the link comes back (and with it the news that the lease is lost).
	sent := px.await("PUB agent.tool.effect")
	close(release)
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the deposed owner's call never left it")
	}
	px.set(false)
	select {
	case <-fenced:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never refused the deposed owner's call")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range executed {
		if f.Partition == part && f.Epoch < newOwner.Epoch {
			t.Errorf("the tool ran for fence %v, older than the new owner's %v", f, newOwner)
		}
	}
}
