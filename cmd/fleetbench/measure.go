package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// op is one operation a benchmark repeats: a tool call, a request, a run.
type op func(ctx context.Context) error

// Latency summarises durations, in microseconds.
type Latency struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_us"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	Max  float64 `json:"max_us"`
}

// summarize sorts ds and returns their percentiles (nearest rank).
func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	rank := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.5) - 1
		i = max(0, min(i, len(ds)-1))
		return us(ds[i])
	}
	return Latency{
		N: len(ds), Mean: us(sum / time.Duration(len(ds))),
		P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: us(ds[len(ds)-1]),
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// sequential runs o n times, one after another, and appends the duration of
// each to ds.
func sequential(ctx context.Context, o op, n int, ds []time.Duration) ([]time.Duration, error) {
	for range n {
		start := time.Now()
		if err := o(ctx); err != nil {
			return ds, err
		}
		ds = append(ds, time.Since(start))
	}
	return ds, nil
}

// Rate is the outcome of a throughput run.
type Rate struct {
	InFlight int     `json:"in_flight"`
	Calls    int64   `json:"calls"`
	Seconds  float64 `json:"seconds"`
	PerSec   float64 `json:"per_sec"`
}

// throughput keeps inFlight operations running until d has passed and
// returns how many completed per second. The first error stops the run.
func throughput(ctx context.Context, o op, inFlight int, d time.Duration) (Rate, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		done     atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	start := time.Now()
	deadline := time.AfterFunc(d, func() { stop.Store(true) })
	defer deadline.Stop()
	for range inFlight {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				if err := o(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := Rate{InFlight: inFlight, Calls: done.Load(), Seconds: elapsed.Seconds()}
	r.PerSec = float64(r.Calls) / elapsed.Seconds()
	if firstErr != nil {
		return r, fmt.Errorf("at %d in flight: %w", inFlight, firstErr)
	}
	return r, ctx.Err()
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
