package objref_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
)

// BenchmarkResultInlineVsRef: one call whose result is size bytes of text,
// sent inline in the result frame (on a server whose max payload is raised
// to 64 MiB so that it fits) or by reference (the worker streams it into
// the bucket, the client reads it back whole): time and bytes allocated
// per call, worker and client together, side by side.
func BenchmarkResultInlineVsRef(b *testing.B) {
	dir := b.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte("max_payload: 64MB\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	srv, err := busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: "127.0.0.1:-1", DataDir: filepath.Join(dir, "js"), ConfigFile: conf, Sync: busserver.Sync{Interval: 2 * time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	st := openStore(b, srv, objref.Limits{Threshold: 64 << 10})
	for _, size := range []int{100 << 10, 1 << 20, 20 << 20} {
		text := strings.Repeat("x", size)
		for _, mode := range []string{"inline", "ref"} {
			b.Run(fmt.Sprintf("%s/%dKiB", mode, size>>10), func(b *testing.B) {
				t := tool("result", func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
					return agentfleet.TextResult(text), nil
				})
				var store *objref.Store
				if mode == "ref" {
					store = st
				}
				c := serve(b, srv, store, t)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := c.Execute(context.Background(), &toolrpc.Call{ID: "c", Name: "result", Agent: "bench", Session: fmt.Sprint(i)}, func(any) {})
					if err != nil {
						b.Fatal(err)
					}
					if ref := res.Content[0]; ref.Type == agentfleet.ContentRef {
						r, _, err := st.Open(context.Background(), ref.Ref)
						if err != nil {
							b.Fatal(err)
						}
						if n, err := io.Copy(io.Discard, r); err != nil || n != int64(size) {
							b.Fatalf("read back %d bytes, %v", n, err)
						}
						r.Close()
						b.StopTimer()
						st.DeleteSession(context.Background(), "bench", fmt.Sprint(i))
						b.StartTimer()
					} else if len(res.Content[0].Text) != size {
						b.Fatalf("inline result of %d bytes", len(res.Content[0].Text))
					}
				}
			})
		}
	}
}
