package scriptfleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/script/procmem"
	"github.com/agentfleet/agentfleet/internal/scripts"
)

// TestMain lets this test binary be the child process that process
// isolation starts.
func TestMain(m *testing.M) {
	scripts.RunChildIfRequested()
	os.Exit(m.Run())
}

// hogCode allocates 1 GB in one step. The memory budget would stop it;
// these tests raise the budget out of the way, so that only the child's
// address-space limit stands between the script and the worker, as it does
// for a builtin that no bound foresaw.
const hogCode = "def execute(args):\n    return str(len('x' * 1000000000))\n"

// isolatedEnv has a budget too large to stop anything.
var isolatedEnv = script.Env{MaxMemory: 8 << 30, Timeout: 5 * time.Second}

func TestProcessIsolation(t *testing.T) {
	ctx := testContext(t)
	s := bustest.MustRunNATS(t)
	changes := make(chan map[string]uint64, 16)
	srv, err := scriptfleet.Serve(ctx, bustest.MustConnect(t, s), scriptfleet.ServerConfig{
		Logger: quietLog, Heartbeat: time.Second, Env: isolatedEnv, // children under -race and a hog miss 100 ms beats
		// The process budget out of the way too: room for a few calls.
		Memory:    procmem.NewProcessMemory(4 * isolatedEnv.MaxMemory),
		Isolation: scripts.IsolationProcess, ChildAddressSpace: 512 << 20,
		OnChange: func(served map[string]uint64) { changes <- served },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	put := func(name, code string) uint64 {
		t.Helper()
		rev, err := srv.Store().Put(ctx, &script.Definition{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`), Code: code})
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	want := map[string]uint64{
		"hog":    put("hog", hogCode),
		"double": put("double", "def execute(args):\n    progress({'n': args['n']})\n    return str(args['n'] * 2)\n"),
		"caller": put("caller", "def execute(args):\n    return 'double says ' + call_tool('double', {'n': 2})\n"),
	}
	w := &scriptWorker{srv: srv, changes: changes}
	w.await(t, want)

	nc := bustest.MustConnect(t, s)
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	_, err = call(t, client, "hog", nil)
	// Under the race detector the runtime's allocator reports the same
	// failure as "too many address space collisions".
	if err == nil || !strings.Contains(err.Error(), "hog: the process running the script died") ||
		!strings.Contains(err.Error(), "out of memory") && !strings.Contains(err.Error(), "address space") {
		t.Fatalf("hog: error = %v, want the child's death of running out of memory", err)
	}
	// The worker serves on.
	if got, err := call(t, client, "double", map[string]any{"n": 21}); err != nil || got != "42" {
		t.Errorf("double = %q, %v; want 42", got, err)
	}
	if got, err := call(t, client, "caller", nil, "double"); err != nil || got != "double says 4" {
		t.Errorf("caller = %q, %v; want call_tool to reach double through the worker", got, err)
	}

	// A dry run dies in its child too, and says so.
	dry := scriptfleet.RemoteDryRun(nc, bus.DefaultPrefix)
	err = dry.DryRun(ctx, &script.Definition{Name: "hog2", Description: "hog", InputSchema: json.RawMessage(`{"type":"object"}`), Code: hogCode})
	if err == nil || !strings.Contains(err.Error(), "hog2: the process running the script died") {
		t.Errorf("dry run of a hog: %v, want the child's death", err)
	}
	// A note still reads as a note after two process hops.
	err = dry.DryRun(ctx, &script.Definition{Name: "picky", Description: "fails on purpose", InputSchema: json.RawMessage(`{"type":"object"}`), Code: "def execute(args):\n    fail('no')\n"})
	if err == nil || !strings.Contains(err.Error(), "called fail()") || !errors.Is(err, script.ErrDryRunIncomplete) {
		t.Errorf("dry run that calls fail(): %v, want a note", err)
	}
	if got, err := call(t, client, "double", map[string]any{"n": 1}); err != nil || got != "2" {
		t.Errorf("double after the dry runs = %q, %v; want 2", got, err)
	}
}
