package toolrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busfleet "github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/micro"
)

// TestBusyBackoffIsBounded keeps a worker of concurrency 1 busy with a call
// of another client (another orchestrator, whose calls this client cannot
// count) and calls it: the refused call backs off exponentially to the cap,
// so the worker sees O(log(timeout/base) + timeout/cap) requests, not one
// every few milliseconds; the call ends at its timeout saying that it never
// ran, and is not retried. The refusals are not errors in micro's stats.
func TestBusyBackoffIsBounded(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	started, release := make(chan struct{}), make(chan struct{})
	var refusals atomic.Int64
	hold := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "hold", Description: "runs until released"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if c.ID == "holder" {
				close(started)
				<-release
			}
			return agentfleet.TextResult("done"), nil
		}),
	}
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{
		Name: "busyworker", Tools: []*agentfleet.Tool{hold}, Concurrency: 1, Logger: quietLog,
		Observe: func(_, outcome string, _ time.Duration) {
			if outcome == "busy" {
				refusals.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })

	other, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	holder := make(chan error, 1)
	go func() {
		p := prepared("hold", map[string]any{})
		p.Call.ID = "holder"
		_, err := fleetexec.Executor{Client: other}.Execute(context.Background(), p, func(any) {})
		holder <- err
	}()
	<-started

	nc := bustest.MustConnect(t, srv)
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	const (
		timeout = 2 * time.Second
		base    = 5 * time.Millisecond   // the default BusyBackoff
		ceiling = 250 * time.Millisecond // the default MaxBusyBackoff
	)
	p := prepared("hold", map[string]any{})
	p.Call.ID, p.Timeout = "refused", timeout
	p.Tool.Annotations.Idempotent = true // would be retried after a timeout on a worker
	_, err = fleetexec.Executor{Client: client}.Execute(context.Background(), p, func(any) {})
	if !errors.Is(err, pipeline.ErrTimeout) || !strings.Contains(err.Error(), "while every worker was busy") || !strings.Contains(err.Error(), "never ran") {
		t.Errorf("err = %v, want a timeout while every worker was busy, saying the call never ran", err)
	}
	// The waits average half their bound: about log2(cap/base) attempts to
	// reach the cap, then one per cap/2. Twice that bounds it with room.
	limit := int64(math.Ceil(math.Log2(float64(timeout/base)))) + int64(4*timeout/ceiling)
	if got := refusals.Load(); got < 2 || got > limit {
		t.Errorf("the worker refused the call %d times in %v, want 2 to %d", got, timeout, limit)
	}
	t.Logf("%d refusals in %v", refusals.Load(), timeout)

	close(release)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	// A refusal is not a failure of the service.
	m, err := nc.Request("$SRV.STATS.busyworker", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats micro.Stats
	if err := json.Unmarshal(m.Data, &stats); err != nil {
		t.Fatal(err)
	}
	for _, ep := range stats.Endpoints {
		if ep.NumErrors != 0 || ep.NumRequests < int(refusals.Load()) {
			t.Errorf("endpoint %s: %d errors (%q) in %d requests; want none in at least %d", ep.Name, ep.NumErrors, ep.LastError, ep.NumRequests, refusals.Load())
		}
	}
}

// limitedWorker serves the tool work with a concurrency limit, counting in
// the tool's handler the calls it runs at once, and holding every call
// until release is closed.
type limitedWorker struct {
	*toolrpc.ToolServer
	running, peak atomic.Int64
}

func startLimitedWorker(t *testing.T, srv *server.Server, concurrency int, started chan<- string, release <-chan struct{}, refusals *atomic.Int64) *limitedWorker {
	t.Helper()
	w := &limitedWorker{}
	work := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "work", Description: "works until released"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			n := w.running.Add(1)
			defer w.running.Add(-1)
			for p := w.peak.Load(); n > p && !w.peak.CompareAndSwap(p, n); p = w.peak.Load() {
			}
			started <- c.ID
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return agentfleet.TextResult("worked"), nil
		}),
	}
	var err error
	w.ToolServer, err = toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{
		Tools: []*agentfleet.Tool{work}, Concurrency: concurrency, Logger: quietLog,
		Observe: func(_, outcome string, _ time.Duration) {
			if outcome == "busy" {
				refusals.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	return w
}

// TestFullFleetQueuesInTheOrchestrator fills a fleet of two workers of
// concurrency 3 and sends more calls: those beyond the six the fleet
// advertises wait in the client, sending nothing, and go out as slots free
// up. The workers never run more than their limit, refusals stay at a few
// per call, and every call completes.
func TestFullFleetQueuesInTheOrchestrator(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	const (
		concurrency = 3
		fleetSlots  = 2 * concurrency
		extra       = 10
	)
	started, release := make(chan string, fleetSlots+extra), make(chan struct{})
	var refusals atomic.Int64
	workers := []*limitedWorker{
		startLimitedWorker(t, srv, concurrency, started, release, &refusals),
		startLimitedWorker(t, srv, concurrency, started, release, &refusals),
	}
	nc := bustest.MustConnect(t, srv)
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	subjects, _ := bus.NewSubjects("")
	fleet, err := busfleet.WatchFleet(context.Background(), nc, subjects, busfleet.FleetConfig{OnCapacity: client.SetCapacity, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fleet.Close() })
	if got := fleet.Capacity()["work"]; got != fleetSlots {
		t.Fatalf("the fleet's capacity for work = %d, want %d", got, fleetSlots)
	}

	done := make(chan error, fleetSlots+extra)
	send := func(i int) {
		p := prepared("work", map[string]any{})
		p.Call.ID = "call-" + strconv.Itoa(i)
		go func() {
			_, err := fleetexec.Executor{Client: client}.Execute(context.Background(), p, func(any) {})
			done <- err
		}()
	}
	for i := range fleetSlots {
		send(i)
	}
	for range fleetSlots {
		<-started
	}
	before := refusals.Load()
	for i := range extra {
		send(fleetSlots + i)
	}
	bustest.Eventually(t, "the extra calls to wait in the client", func() bool { return client.Queued("work") == extra })
	if got := refusals.Load() - before; got != 0 {
		t.Errorf("the workers refused %d calls that should have waited in the client", got)
	}
	close(release)
	for range fleetSlots + extra {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	for i, w := range workers {
		if got := w.peak.Load(); got > concurrency {
			t.Errorf("worker %d ran %d calls at once, its limit is %d", i, got, concurrency)
		}
	}
	if got, limit := refusals.Load(), int64(fleetSlots+extra); got > limit {
		t.Errorf("%d busy refusals for %d calls, want at most one a call", got, fleetSlots+extra)
	}
	t.Logf("%d busy refusals for %d calls", refusals.Load(), fleetSlots+extra)
}

// TestInFlightCapFollowsTheFleet queues calls behind a full worker, then
// starts a second one: its announcement raises the cap and the queued calls
// go to it while the first worker's calls still run. When it leaves, the
// cap comes back down.
func TestInFlightCapFollowsTheFleet(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	const concurrency = 2
	started, release := make(chan string, 4*concurrency), make(chan struct{})
	var refusals atomic.Int64
	startLimitedWorker(t, srv, concurrency, started, release, &refusals)
	nc := bustest.MustConnect(t, srv)
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	subjects, _ := bus.NewSubjects("")
	fleet, err := busfleet.WatchFleet(context.Background(), nc, subjects, busfleet.FleetConfig{OnCapacity: client.SetCapacity, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fleet.Close() })

	done := make(chan error, 2*concurrency)
	for i := range 2 * concurrency {
		p := prepared("work", map[string]any{})
		p.Call.ID = "call-" + strconv.Itoa(i)
		go func() {
			_, err := fleetexec.Executor{Client: client}.Execute(context.Background(), p, func(any) {})
			done <- err
		}()
	}
	for range concurrency {
		<-started
	}
	bustest.Eventually(t, "calls to wait behind the full worker", func() bool { return client.Queued("work") == concurrency })

	second := startLimitedWorker(t, srv, concurrency, started, release, &refusals)
	for range concurrency {
		<-started // the queued calls, on the second worker
	}
	if got := second.peak.Load(); got != concurrency {
		t.Errorf("the second worker ran %d calls at once, want the %d queued", got, concurrency)
	}
	close(release)
	for range 2 * concurrency {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := second.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the cap to come back down", func() bool { return fleet.Capacity()["work"] == concurrency })
}

var quietLog = slog.New(slog.DiscardHandler)
