package toolrpc_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats-server/v2/server"
	"go.opentelemetry.io/otel/trace"
)

// startEchoFleet starts a NATS server, a worker serving an echo tool and a
// tool client, each on its own connection, all in this process.
func startEchoFleet(b *testing.B) *toolrpc.ToolClient {
	b.Helper()
	srv := bustest.MustRunNATS(b)
	serveEcho(b, srv)
	c, err := toolrpc.NewToolClient(bustest.MustConnect(b, srv), toolrpc.ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// serveEcho starts a worker on srv serving "echo", which answers its text
// argument, until the benchmark ends.
func serveEcho(b *testing.B, srv *server.Server) {
	b.Helper()
	serveEchoTraced(b, srv, nil)
}

// serveEchoTraced is serveEcho with the worker's tracer set to tracer.
func serveEchoTraced(b *testing.B, srv *server.Server, tracer trace.Tracer) {
	b.Helper()
	echo := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "echo", Description: "echo", Parallel: true},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			text, _ := c.Arguments["text"].(string)
			return agentfleet.TextResult(text), nil
		}),
	}
	w, err := toolrpc.Serve(bustest.MustConnect(b, srv), toolrpc.ServerConfig{
		Name: "bench", Tools: []*agentfleet.Tool{echo}, Concurrency: 1024,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Tracer: tracer,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Stop() })
}

// BenchmarkToolClientExecute measures one call through the tool protocol
// over a real NATS server: request, ack, result. Allocations count both
// sides, client and worker, since both run in this process.
func BenchmarkToolClientExecute(b *testing.B) {
	c := startEchoFleet(b)
	text := strings.Repeat("x", 200)
	benchEchoCalls(b, c, text)
}

// benchEchoCalls measures echo calls of text through c, one after another
// and 32 at once per CPU.
func benchEchoCalls(b *testing.B, c *toolrpc.ToolClient, text string) {
	args := map[string]any{"text": text}
	tool := &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "echo"}}
	var ids atomic.Uint64
	call := func() {
		prep := &pipeline.Prepared{
			Tool: tool, Args: args, Timeout: pipeline.DefaultTimeout, Agent: "bench", Session: "s1", RunID: "r1",
			Call: agentfleet.ToolCall{ID: "call_" + strconv.FormatUint(ids.Add(1), 36), Name: "echo", Arguments: args},
		}
		res, err := fleetexec.Executor{Client: c}.Execute(context.Background(), prep, func(any) {})
		if err != nil {
			b.Fatal(err)
		}
		if got := agentfleet.JoinText(res.Content); got != text {
			b.Fatalf("result = %q", got)
		}
	}
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call()
			}
		})
	})
}
