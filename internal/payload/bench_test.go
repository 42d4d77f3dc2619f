package payload_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/payload"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats.go"
)

// BenchmarkOrchestratorSide measures what the orchestrator allocates to
// take one result: decoding an inline result frame of the size, against
// checking a ref block to an object of the size and reading its view (a
// text file, so the 16 KiB head is read; 100 MiB passes by reference
// only). peak-heap-MiB is the largest heap in use seen while the
// executor ran, sampled every millisecond. The NATS server runs in a
// child process, so that its memory is not counted.
func BenchmarkOrchestratorSide(b *testing.B) {
	ctx := context.Background()
	nc, err := nats.Connect(childNATS(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	st, err := objref.OpenOn(ctx, nc, objref.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{100 << 10, 1 << 20, 20 << 20, 100 << 20} {
		if size <= 20<<20 {
			b.Run(fmt.Sprintf("inline/%dKiB", size>>10), func(b *testing.B) {
				buf, err := wire.EncodeFrameBuf(&wire.Frame{T: wire.FrameResult, ID: "c", Result: agentfleet.TextResult(strings.Repeat("x", size))})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := wire.DecodeFrame(buf.Bytes()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("ref/%dKiB", size>>10), func(b *testing.B) {
			ref, err := st.Put(ctx, objref.Meta{Agent: "bench", Session: "s", MIMEType: "text/csv"}, io.LimitReader(zeros{}, int64(size)), 1<<30, "bench")
			if err != nil {
				b.Fatal(err)
			}
			e := payload.Executor{Store: st, Next: pipeline.ExecutorFunc(func(context.Context, *pipeline.Prepared, pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
				return &agentfleet.ToolResult{Content: []agentfleet.Content{ref}}, nil
			})}
			runtime.GC()
			peak := watchHeap(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := e.Execute(ctx, &pipeline.Prepared{Agent: "bench", Session: "s"}, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(peak()/(1<<20), "peak-heap-MiB")
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// watchHeap samples the heap in use until the returned function is
// called, which returns the largest sample.
func watchHeap(b *testing.B) func() float64 {
	stop, done := make(chan struct{}), make(chan float64)
	go func() {
		var ms runtime.MemStats
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				done <- float64(peak)
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 { close(stop); return <-done }
}

// TestMain runs, in a child process, the NATS server of the benchmark.
func TestMain(m *testing.M) {
	if dir := os.Getenv("PAYLOAD_BENCH_NATS_DIR"); dir != "" {
		s, err := busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: "127.0.0.1:-1", DataDir: dir, Sync: busserver.Sync{Interval: 2 * time.Minute}})
		if err != nil {
			panic(err)
		}
		fmt.Println(s.ClientURL())
		select {}
	}
	os.Exit(m.Run())
}

// childNATS starts a NATS server with JetStream in a child process,
// killed when the benchmark ends, and returns its URL.
func childNATS(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), "PAYLOAD_BENCH_NATS_DIR="+b.TempDir())
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("the NATS child said %q: %v", line, err)
	}
	return strings.TrimSpace(line)
}
