package objref_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TestMain runs, in a child process, a worker whose upload never ends
// (TestKilledUploadLeavesNothing).
func TestMain(m *testing.M) {
	if url := os.Getenv("OBJREF_UPLOADER_URL"); url != "" {
		runUploader(url)
		return
	}
	os.Exit(m.Run())
}

// seeded returns n bytes of a seeded stream, made as they are read.
func seeded(seed uint64, n int64) io.Reader {
	return io.LimitReader(&randReader{r: rand.New(rand.NewPCG(seed, seed))}, n)
}

type randReader struct{ r *rand.Rand }

func (r *randReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.r.Uint32())
	}
	return len(p), nil
}

func sumOf(t testing.TB, r io.Reader) (string, int64) {
	t.Helper()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

func openStore(t testing.TB, srv *server.Server, lim objref.Limits) *objref.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := objref.OpenOn(ctx, bustest.MustConnect(t, srv), objref.Config{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// serve serves tools wrapped by Offload on srv, and returns a client.
func serve(t testing.TB, srv *server.Server, st *objref.Store, tools ...*agentfleet.Tool) *toolrpc.ToolClient {
	t.Helper()
	for i, tl := range tools {
		tools[i] = objref.Offload(tl, st)
	}
	w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Name: "files", Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	c, err := toolrpc.NewToolClient(bustest.MustConnect(t, srv), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t testing.TB, c *toolrpc.ToolClient, name, session string) (*agentfleet.ToolResult, error) {
	t.Helper()
	return c.Execute(context.Background(), &toolrpc.Call{ID: "call-" + name, Name: name, Agent: "default", Session: session, RunID: "r1", Timeout: 2 * time.Minute}, func(any) {})
}

func tool(name string, h agentfleet.HandlerFunc) *agentfleet.Tool {
	return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Description: name}, Handler: h}
}

// runUploader connects to url and puts an object that never ends, a
// chunk at a time, telling the parent each chunk.
func runUploader(url string) {
	nc, err := nats.Connect(url)
	if err != nil {
		panic(err)
	}
	st, err := objref.OpenOn(context.Background(), nc, objref.Config{})
	if err != nil {
		panic(err)
	}
	_, err = st.Put(context.Background(), objref.Meta{Agent: "default", Session: "doomed", MIMEType: "text/csv"}, &slowReader{r: seeded(7, 1<<40)}, 1<<40, "test")
	panic(err)
}

// slowReader passes 128 KiB a read and says so on standard output.
type slowReader struct{ r io.Reader }

func (s *slowReader) Read(p []byte) (int, error) {
	if len(p) > 128<<10 {
		p = p[:128<<10]
	}
	n, err := io.ReadFull(s.r, p)
	os.Stdout.WriteString("chunk\n")
	time.Sleep(5 * time.Millisecond) // a slow producer, not a wait in the test
	return n, err
}
