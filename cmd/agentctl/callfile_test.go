package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// TestCallWritesTheFile: call -o writes the 20 MB file a tool streamed
// into the object store, whole (sha256), and deletes the call's objects;
// a result with no file is refused with what it held.
func TestCallWritesTheFile(t *testing.T) {
	s := bustest.MustRunNATS(t)
	data := []byte(strings.Repeat("0123456789abcdef", 20<<16)) // 20 MiB
	sum := sha256.Sum256(data)
	report := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "report", Description: "a large CSV"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
			ref, err := objref.Put(ctx, strings.NewReader(string(data)), "text/csv", "report.csv")
			return &agentfleet.ToolResult{Content: []agentfleet.Content{ref}}, err
		}),
	}
	w, err := worker.Start(bustest.MustConnect(t, s), worker.Config{Tools: []string{"echo"}, Extra: []*agentfleet.Tool{report}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	out := filepath.Join(t.TempDir(), "report.csv")
	_, stderr, err := run(t, s.ClientURL(), "call", "-o", out, "report")
	if err != nil {
		t.Fatalf("call -o: %v (%s)", err, stderr)
	}
	got, _ := os.ReadFile(out)
	if gs := sha256.Sum256(got); gs != sum {
		t.Errorf("wrote %d bytes, sha256 %x, want %d, %x", len(got), gs, len(data), sum)
	}
	if want := "wrote 20971520 bytes (text/csv, sha256 " + hex.EncodeToString(sum[:]); !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	js, _ := jetstream.New(bustest.MustConnect(t, s))
	obs, err := js.ObjectStore(context.Background(), objref.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := obs.List(context.Background()); !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Errorf("objects left after -o: %d, %v, want deleted", len(list), err)
	}
	_, _, err = run(t, s.ClientURL(), "call", "-o", out, "echo", `{"text":"no file"}`)
	if err == nil || !strings.Contains(err.Error(), "holds no file (no ref block, no image): no file") {
		t.Errorf("no file: err = %v", err)
	}
}
