package toolrpc_test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// BenchmarkToolServerCall measures the worker side of one call: raw call
// requests sent with nats.Conn.Request to a worker serving an echo tool,
// answered by its result frame, without a ToolClient. Allocations count the
// worker and the bare request; cpu-ns/op is the CPU time of the whole
// process (NATS server, worker and caller) per call, which a loaded machine
// skews less than ns/op.
func BenchmarkToolServerCall(b *testing.B) {
	srv := bustest.MustRunNATS(b)
	text := strings.Repeat("x", 200)
	serveEcho(b, srv)
	cc := bustest.MustConnect(b, srv)
	var ids atomic.Uint64
	call := func() {
		req, err := wire.EncodeRequest(&wire.CallRequest{
			V: wire.ProtocolVersion, ID: "call_" + strconv.FormatUint(ids.Add(1), 36), Tool: "echo",
			Args: map[string]any{"text": text}, TimeoutMS: 60_000, Attempt: 1, Agent: "bench", Session: "s1", RunID: "r1",
		})
		if err != nil {
			b.Fatal(err)
		}
		m, err := cc.Request("agent.tool.echo", req, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		f, err := wire.DecodeFrame(m.Data)
		if err != nil {
			b.Fatal(err)
		}
		if f.T != wire.FrameResult || agentfleet.JoinText(f.Result.Content) != text {
			b.Fatalf("answer %q", f.T)
		}
	}
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			call()
		}
		reportCPU(b, cpu)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32)
		cpu := processCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call()
			}
		})
		reportCPU(b, cpu)
	})
}

// reportCPU reports the process's CPU time since start per iteration.
func reportCPU(b *testing.B, start time.Duration) {
	if used := processCPU() - start; used > 0 && b.N > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
