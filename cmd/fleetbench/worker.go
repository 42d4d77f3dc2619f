package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/trace"
)

// WorkerConfig configures the worker child process: a bus.ToolServer serving
// the bench_echo and bench_sleep tools.
type WorkerConfig struct {
	Name        string
	Concurrency int
	// Delay, when positive, is how long every bench_sleep call takes,
	// whatever its arguments ask: the knob that makes a worker slow.
	Delay      time.Duration
	Heartbeat  time.Duration
	CPUProfile string
	// Prefix is the subject prefix of the tools; default bus.DefaultPrefix.
	Prefix string
	// OTLPEndpoint, if set, is the base URL of an OTLP/HTTP receiver: the
	// worker traces the calls it runs and exports the spans there.
	OTLPEndpoint string
}

func (c *WorkerConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Name, "name", "benchworker", "micro service name; also names the stats subject")
	fs.IntVar(&c.Concurrency, "concurrency", 64, "calls run at once; more are refused as busy")
	fs.DurationVar(&c.Delay, "delay", 0, "if positive, the duration of every bench_sleep call, whatever its arguments")
	fs.DurationVar(&c.Heartbeat, "heartbeat", time.Second, "interval of heartbeat frames during a call")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of the worker to this file")
	fs.StringVar(&c.Prefix, "prefix", "", "subject prefix of the tools (default "+bus.DefaultPrefix+")")
	fs.StringVar(&c.OTLPEndpoint, "otlp-endpoint", "", "if set, trace the calls and export the spans over OTLP/HTTP to this base URL")
}

// WorkerStats is a worker's answer on its stats subject.
type WorkerStats struct {
	Name string `json:"name"`
	// Worker is the name the worker gives in results: name/id.
	Worker string `json:"worker"`
	// Calls counts the calls the worker ran.
	Calls uint64 `json:"calls"`
	// PeakInFlight is the most calls that ran at once; Limit is the
	// worker's concurrency.
	PeakInFlight int64 `json:"peak_in_flight"`
	Limit        int   `json:"limit"`
	// Busy counts the calls the worker refused because it was at its limit.
	Busy uint64 `json:"busy_refusals"`
}

// statsSubject is where the worker named name answers requests for its
// WorkerStats.
func statsSubject(name string) string { return "fleetbench.stats." + name }

func (m *Main) runWorker(ctx context.Context) (err error) {
	c := m.Worker
	if c.CPUProfile != "" {
		stop, err := startCPUProfile(c.CPUProfile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	nc, err := bus.Connect(bus.ConnectConfig{URL: m.NATSURL, Name: c.Name, Logger: m.logger})
	if err != nil {
		return err
	}
	defer nc.Close()
	var tracer trace.Tracer
	if c.OTLPEndpoint != "" {
		tp, terr := newTracerProvider(ctx, c.OTLPEndpoint, "fleetbench-worker")
		if terr != nil {
			return terr
		}
		// After the drain below, so that the last calls' spans go too.
		defer func() { err = errors.Join(err, shutdownTracer(tp)) }()
		tracer = tp.Tracer(tracing.Scope)
	}
	var (
		g    gauge
		busy atomic.Uint64
	)
	srv, err := toolrpc.Serve(nc, toolrpc.ServerConfig{
		Name: c.Name, Prefix: c.Prefix, Tools: benchTools(&g, c.Delay), Concurrency: c.Concurrency,
		Heartbeat: c.Heartbeat, Logger: m.logger, Tracer: tracer,
		Observe: func(_, outcome string, _ time.Duration) {
			if outcome == "busy" {
				busy.Add(1)
			}
		},
	})
	if err != nil {
		return err
	}
	sub, err := nc.SubscribeSync(statsSubject(c.Name))
	if err != nil {
		return errors.Join(err, srv.Stop())
	}
	if err := nc.Flush(); err != nil {
		return errors.Join(err, srv.Stop())
	}
	go func() {
		for {
			msg, err := sub.NextMsgWithContext(context.Background())
			if err != nil {
				return // unsubscribed
			}
			b, _ := json.Marshal(WorkerStats{
				Name: c.Name, Worker: srv.Name(), Calls: g.calls.Load(),
				PeakInFlight: g.peak.Load(), Limit: srv.Concurrency(), Busy: busy.Load(),
			})
			_ = msg.Respond(b)
		}
	}()
	m.serveUntilParentGoes(ctx, srv.Name())
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(sub.Unsubscribe(), srv.Drain(dctx), nc.Flush())
}

// workerStats asks the worker named name for its counters.
func workerStats(nc *bus.Conn, name string) (*WorkerStats, error) {
	msg, err := nc.Request(statsSubject(name), nil, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("stats of worker %s: %w", name, err)
	}
	var s WorkerStats
	if err := json.Unmarshal(msg.Data, &s); err != nil {
		return nil, fmt.Errorf("stats of worker %s: %w", name, err)
	}
	return &s, nil
}
