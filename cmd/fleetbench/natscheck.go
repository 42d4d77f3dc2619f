package main

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"
)

// natsCheck re-checks the raw baseline with code of its own: a connection
// opened with plain nats.Connect, the request encoded once, nc.Request in a
// loop, and plain goroutines for the calls in flight. It asks the same
// responder as the raw method, so if the two disagree, the raw method's own
// client code (encoding, decoding, the shared harness) is the bottleneck,
// not NATS.
type natsCheck struct {
	nc         *nats.Conn
	req, reply []byte
}

func newNATSCheck(url, text string) (*natsCheck, error) {
	req, err := msgpack.Marshal(&wire.CallRequest{V: wire.ProtocolVersion, ID: "call_nats", Tool: toolEcho,
		Args: map[string]any{"text": text}, TimeoutMS: 60_000, Attempt: 1})
	if err != nil {
		return nil, err
	}
	reply, err := msgpack.Marshal(agentfleet.TextResult(text))
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url, nats.Name("fleetbench-nats-check"))
	if err != nil {
		return nil, err
	}
	return &natsCheck{nc: nc, req: req, reply: reply}, nil
}

func (c *natsCheck) close() { c.nc.Close() }

// call is one request; the reply must be the bytes the responder sends
// for it.
func (c *natsCheck) call() error {
	msg, err := c.nc.Request(rawSubject, c.req, 30*time.Second)
	if err != nil {
		return fmt.Errorf("nats request: %w", err)
	}
	if !bytes.Equal(msg.Data, c.reply) {
		return fmt.Errorf("nats reply: unexpected %d bytes", len(msg.Data))
	}
	return nil
}

// latency makes n requests one after another and returns their durations.
func (c *natsCheck) latency(ctx context.Context, n int) ([]time.Duration, error) {
	ds := make([]time.Duration, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return ds, err
		}
		start := time.Now()
		if err := c.call(); err != nil {
			return ds, err
		}
		ds = append(ds, time.Since(start))
	}
	return ds, nil
}

// rate runs inFlight goroutines, each making requests back to back, for d.
func (c *natsCheck) rate(ctx context.Context, inFlight int, d time.Duration) (Rate, error) {
	var (
		calls atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	end := start.Add(d)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				if err := c.call(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	r := Rate{InFlight: inFlight, Calls: calls.Load(), Seconds: secs, PerSec: float64(calls.Load()) / secs}
	if first != nil {
		return r, fmt.Errorf("at %d in flight: %w", inFlight, first)
	}
	return r, ctx.Err()
}
