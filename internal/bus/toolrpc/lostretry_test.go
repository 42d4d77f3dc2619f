package toolrpc_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/fleetexec"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats.go"
)

// silentWorker answers every request of tool name with an ack announcing
// 10ms heartbeats, and then nothing: each attempt's worker is lost. It
// counts the requests.
func silentWorker(t *testing.T, nc *nats.Conn, name string) *atomic.Int32 {
	t.Helper()
	ack, err := wire.EncodeFrame(&wire.Frame{T: wire.FrameAck, Worker: "mute/1", HeartbeatMS: wire.MinHeartbeat.Milliseconds()})
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	if _, err := nc.Subscribe("agent.tool."+name, func(m *nats.Msg) {
		requests.Add(1)
		_ = nc.Publish(m.Reply, ack)
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return &requests
}

func idempotent(name string) *pipeline.Prepared {
	prep := prepared(name, map[string]any{})
	prep.Tool.Annotations.Idempotent = true
	return prep
}

// TestLostAttemptsAreRetriedUpToMaxAttempts: an idempotent tool whose
// worker is lost on every attempt is sent MaxAttempts times, each retry
// announced as a partial result naming the attempt and the lost worker, and
// the call fails with ErrWorkerLost saying how many attempts were made. A
// tool that is not idempotent is sent once.
func TestLostAttemptsAreRetriedUpToMaxAttempts(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	requests := silentWorker(t, bustest.MustConnect(t, srv), "mute")
	c := newClient(t, srv, toolrpc.ClientConfig{HeartbeatMisses: 1, RetryBackoff: time.Millisecond, MaxAttempts: 3})

	var retries []map[string]any
	_, err := fleetexec.Executor{Client: c}.Execute(context.Background(), idempotent("mute"), func(p any) {
		if m, ok := p.(map[string]any); ok && m["retry"] != nil {
			retries = append(retries, m["retry"].(map[string]any))
		}
	})
	if !errors.Is(err, pipeline.ErrWorkerLost) || !strings.HasSuffix(err.Error(), "(after 3 attempts)") {
		t.Errorf("err = %v, want worker lost (after 3 attempts)", err)
	}
	if got := requests.Load(); got != 3 {
		t.Errorf("%d requests, want 3", got)
	}
	if len(retries) != 2 {
		t.Fatalf("retries announced %v, want 2", retries)
	}
	for i, r := range retries {
		if r["attempt"] != i+2 || r["worker"] != "mute/1" || !strings.Contains(r["reason"].(string), "sent nothing") {
			t.Errorf("retry %d = %v, want attempt %d of lost worker mute/1", i, r, i+2)
		}
	}

	requests.Store(0)
	_, err = fleetexec.Executor{Client: c}.Execute(context.Background(), prepared("mute", map[string]any{}), func(any) {})
	if !errors.Is(err, pipeline.ErrWorkerLost) || !strings.Contains(err.Error(), "outcome is unknown and it was not retried") {
		t.Errorf("err = %v, want worker lost, not retried", err)
	}
	if got := requests.Load(); got != 1 {
		t.Errorf("%d requests of a tool not idempotent, want 1", got)
	}
}

// TestAbortWhileWaitingToRetry: a call aborted while it waits to be sent
// again ends with the context's error itself, and is not sent again.
func TestAbortWhileWaitingToRetry(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	requests := silentWorker(t, bustest.MustConnect(t, srv), "mute")
	c := newClient(t, srv, toolrpc.ClientConfig{HeartbeatMisses: 1, RetryBackoff: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := fleetexec.Executor{Client: c}.Execute(ctx, idempotent("mute"), func(p any) {
		if m, ok := p.(map[string]any); ok && m["retry"] != nil {
			cancel() // the wait before the second attempt begins
		}
	})
	if err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled itself", err)
	}
	if got := requests.Load(); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
}
