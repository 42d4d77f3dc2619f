package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/pipeline"
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
	w, err := bus.Serve(bustest.MustConnect(t, srv), bus.ServerConfig{
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

	other, err := bus.NewToolClient(bustest.MustConnect(t, srv), bus.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	holder := make(chan error, 1)
	go func() {
		p := prepared("hold", map[string]any{})
		p.Call.ID = "holder"
		_, err := other.Execute(context.Background(), p, func(any) {})
		holder <- err
	}()
	<-started

	nc := bustest.MustConnect(t, srv)
	client, err := bus.NewToolClient(nc, bus.ClientConfig{})
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
	_, err = client.Execute(context.Background(), p, func(any) {})
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
