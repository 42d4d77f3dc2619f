package toolrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busfleet "github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestMain lets the test binary run as a worker process that a test kills:
// with OUTCOME_WORKER_URL set, it serves the tool "charge" (not idempotent),
// whose calls never end, recording outcomes, and says "ready" on stdout.
func TestMain(m *testing.M) {
	if url := os.Getenv("OUTCOME_WORKER_URL"); url != "" {
		nc, err := nats.Connect(url)
		if err != nil {
			panic(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := toolrpc.OpenOutcomesOn(ctx, nc, toolrpc.OutcomeConfig{})
		cancel()
		if err != nil || out == nil {
			panic("outcomes: " + errors.Join(err).Error())
		}
		if _, err := toolrpc.Serve(nc, toolrpc.ServerConfig{Name: "doomed", Tools: []*agentfleet.Tool{chargeTool(nil, nil)}, Outcomes: out, Beat: 100 * time.Millisecond}); err != nil {
			panic(err)
		}
		os.Stdout.WriteString("ready\n")
		select {}
	}
	os.Exit(m.Run())
}

// chargeTool is a tool that is not idempotent: each call counts one
// execution in runs, then waits for release (forever when nil).
func chargeTool(runs *atomic.Int32, release <-chan struct{}) *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "charge", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if runs != nil {
				runs.Add(1)
			}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			var size int
			fmt.Sscan(fmt.Sprint(call.Arguments["size"]), &size)
			if size > 0 {
				return agentfleet.TextResult(strings.Repeat("x", size)), nil
			}
			return agentfleet.TextResult("charged " + call.ID), nil
		}),
	}
}

func openOutcomes(t *testing.T, srv *server.Server, cfg toolrpc.OutcomeConfig) *toolrpc.Outcomes {
	t.Helper()
	js, err := jetstream.New(bustest.MustConnect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	out, err := toolrpc.OpenOutcomes(context.Background(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func watchFleet(t *testing.T, srv *server.Server) *busfleet.Fleet {
	t.Helper()
	subjects, _ := bus.NewSubjects("")
	f, err := busfleet.WatchFleet(context.Background(), bustest.MustConnect(t, srv), subjects, busfleet.FleetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestDecideRecovery holds the rule a new owner follows for a call found in
// flight: a recorded final frame is used, a live worker's marker is waited
// on, anything else is unknown.
func TestDecideRecovery(t *testing.T) {
	frame := []byte{0x81}
	for _, tc := range []struct {
		name  string
		rec   *toolrpc.OutcomeRecord
		alive bool
		want  toolrpc.Recovery
	}{
		{"no record", nil, false, toolrpc.RecoveryUnknown},
		{"no record, whatever the fleet", nil, true, toolrpc.RecoveryUnknown},
		{"done", &toolrpc.OutcomeRecord{State: toolrpc.OutcomeDone, Frame: frame}, true, toolrpc.RecoveryUse},
		{"done by a worker that left since", &toolrpc.OutcomeRecord{State: toolrpc.OutcomeDone, Frame: frame}, false, toolrpc.RecoveryUse},
		{"done, too large to record", &toolrpc.OutcomeRecord{State: toolrpc.OutcomeDone, Omitted: true, Size: 1 << 20}, true, toolrpc.RecoveryUnknown},
		{"done without a frame", &toolrpc.OutcomeRecord{State: toolrpc.OutcomeDone}, true, toolrpc.RecoveryUnknown},
		{"started, worker alive", &toolrpc.OutcomeRecord{State: toolrpc.OutcomeStarted}, true, toolrpc.RecoveryWait},
		{"started, worker gone", &toolrpc.OutcomeRecord{State: toolrpc.OutcomeStarted}, false, toolrpc.RecoveryUnknown},
		{"unknown state", &toolrpc.OutcomeRecord{State: "bogus", Frame: frame}, true, toolrpc.RecoveryUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := toolrpc.DecideRecovery(tc.rec, tc.alive); got != tc.want {
				t.Errorf("DecideRecovery = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOutcomeKeyOfHostileIDs: call ids come from models; whatever they
// hold (KV wildcards, dots, spaces, control bytes, 64 KiB), the key is a
// valid KV key of fixed length, and the session and run keep equal ids
// apart. A record under such a key is written and read back.
func TestOutcomeKeyOfHostileIDs(t *testing.T) {
	valid := regexp.MustCompile(`^c\.[0-9a-f]{64}$`)
	ids := []string{"call_1", "a b", "*", ">", "a.*.>", "..", "", "\x00\n\t", "ключ", strings.Repeat("z", 64<<10)}
	seen := map[string]bool{}
	for _, id := range ids {
		k := toolrpc.OutcomeKey("s", "r", id)
		if !valid.MatchString(k) {
			t.Errorf("key of id %.20q = %q, not a valid key", id, k)
		}
		seen[k] = true
	}
	if len(seen) != len(ids) {
		t.Errorf("%d distinct keys of %d ids", len(seen), len(ids))
	}
	if toolrpc.OutcomeKey("s1", "r", "x") == toolrpc.OutcomeKey("s2", "r", "x") || toolrpc.OutcomeKey("s", "r1", "x") == toolrpc.OutcomeKey("s", "r2", "x") ||
		toolrpc.OutcomeKey("a\x00b", "", "x") == toolrpc.OutcomeKey("a", "b", "x") {
		t.Error("equal ids of other sessions or runs share a key")
	}

	srv := bustest.MustRunNATS(t)
	out := openOutcomes(t, srv, toolrpc.OutcomeConfig{})
	var runs atomic.Int32
	release := make(chan struct{})
	close(release)
	w := serve(t, srv, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{chargeTool(&runs, release)}, Outcomes: out})
	c := newClient(t, srv, toolrpc.ClientConfig{})
	id := "a.*.> \x00" + strings.Repeat("z", 1000)
	if _, err := c.Execute(context.Background(), &toolrpc.Call{ID: id, Name: "charge", Session: "s", RunID: "r", Timeout: 10 * time.Second}, func(any) {}); err != nil {
		t.Fatal(err)
	}
	rec, err := out.Recover(context.Background(), toolrpc.OutcomeKey("s", "r", id), func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Result.Content[0].Text; got != "charged "+id || rec.Worker != w.Name() {
		t.Errorf("recovered %.40q from %s, want the call's result from %s", got, rec.Worker, w.Name())
	}
}

// TestRecordedOutcomeOfAClientThatDied: a tool client dispatches a call of
// a tool that is not idempotent and dies (its connection closes) while the
// worker runs it. A second client, looking the call up while it still
// runs, waits for it, and gets the result the worker recorded when it
// finished; the tool ran once. A result larger than the record bound is
// recorded as finished with its size only.
func TestRecordedOutcomeOfAClientThatDied(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	out := openOutcomes(t, srv, toolrpc.OutcomeConfig{MaxRecord: 4 << 10})
	var runs atomic.Int32
	release := make(chan struct{})
	serve(t, srv, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{chargeTool(&runs, release)}, Outcomes: out})
	fleet := watchFleet(t, srv)

	dying := bustest.MustConnect(t, srv)
	first, err := toolrpc.NewToolClient(dying, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   string
		size int
	}{{"call-small", 0}, {"call-large", 64 << 10}} {
		go first.Execute(context.Background(), &toolrpc.Call{ID: tc.id, Name: "charge", Session: "s", RunID: "r", Args: map[string]any{"size": tc.size}, Timeout: time.Minute}, func(any) {})
	}
	keySmall, keyLarge := toolrpc.OutcomeKey("s", "r", "call-small"), toolrpc.OutcomeKey("s", "r", "call-large")
	bustest.Eventually(t, "both calls marked started", func() bool {
		a, errA := out.Get(context.Background(), keySmall)
		b, errB := out.Get(context.Background(), keyLarge)
		return errA == nil && errB == nil && a.State == toolrpc.OutcomeStarted && b.State == toolrpc.OutcomeStarted
	})
	dying.Close() // the first client dies with both calls in flight

	got := make(chan *toolrpc.Recovered, 2)
	errs := make(chan error, 2)
	for _, k := range []string{keySmall, keyLarge} {
		go func() {
			r, err := out.Recover(context.Background(), k, fleet.Has)
			if err != nil {
				errs <- err
				return
			}
			got <- r
		}()
	}
	close(release) // the worker finishes both
	for range 2 {
		select {
		case err := <-errs:
			t.Fatalf("recover: %v", err)
		case r := <-got:
			switch {
			case r.Omitted:
				if r.Result != nil || r.Size < 64<<10 {
					t.Errorf("omitted record: result %v, size %d; want no result and the frame's size", r.Result, r.Size)
				}
			case r.Result == nil || r.Result.Content[0].Text != "charged call-small" || r.IsError:
				t.Errorf("recovered %+v, want the small call's result", r)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no recovered outcome in 20s")
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("%d executions, want 2 (each call once)", n)
	}
	if _, err := out.Recover(context.Background(), toolrpc.OutcomeKey("s", "r", "never-sent"), fleet.Has); !errors.Is(err, toolrpc.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "no worker recorded the call") {
		t.Errorf("recover of a call never sent: %v, want unknown, no record", err)
	}
}

// TestOutcomeOfAKilledWorkerIsUnknown: the worker process running a call
// is killed with SIGKILL; a new owner waiting on its marker stops waiting
// once the fleet drops the worker, and the outcome is unknown, naming the
// worker that left.
func TestOutcomeOfAKilledWorkerIsUnknown(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	out := openOutcomes(t, srv, toolrpc.OutcomeConfig{})
	fleet := watchFleet(t, srv)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "OUTCOME_WORKER_URL="+srv.ClientURL())
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("worker said %q, want ready", line)
	}
	c := newClient(t, srv, toolrpc.ClientConfig{})
	go c.Execute(context.Background(), &toolrpc.Call{ID: "call-1", Name: "charge", Session: "s", RunID: "r", Timeout: time.Minute}, func(any) {})
	key := toolrpc.OutcomeKey("s", "r", "call-1")
	var worker string
	bustest.Eventually(t, "the call marked started by a worker of the fleet", func() bool {
		rec, err := out.Get(context.Background(), key)
		if err == nil {
			worker = rec.WorkerID
		}
		return err == nil && rec.State == toolrpc.OutcomeStarted && fleet.Has(rec.WorkerID)
	})
	done := make(chan error, 1)
	go func() {
		_, err := out.Recover(context.Background(), key, fleet.Has)
		done <- err
	}()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, toolrpc.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "left the fleet") || !strings.Contains(err.Error(), worker) {
			t.Errorf("err = %v, want unknown: worker %s left the fleet", err, worker)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("still waiting 20s after the worker was killed")
	}
}

// TestGarbageRecordsAreUnknown: records that whoever may write the bucket
// put there (bad JSON, an unknown state, a frame that does not decode, a
// frame that is no result) give no outcome, and the error names the key and
// what was wrong with it; nothing is taken as a result.
func TestGarbageRecordsAreUnknown(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	out := openOutcomes(t, srv, toolrpc.OutcomeConfig{})
	js, _ := jetstream.New(bustest.MustConnect(t, srv))
	kv, err := js.KeyValue(context.Background(), toolrpc.OutcomeBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct{ value, want string }{
		{`{not json`, "invalid character"},
		{`{"state":"finished"}`, `unknown state "finished"`},
		{`{"state":"done","worker":"w/1","frame":"3q2+7w=="}`, "record c."},
		{`{"state":"done","worker":"w/1","frame":"gaF0omhi"}`, `holds a "hb" frame, not a result`},
		{`{"state":"done","worker":"w/1"}`, "holds no frame"},
	} {
		key := toolrpc.OutcomeKey("s", "r", fmt.Sprint("garbage-", i))
		if _, err := kv.Put(context.Background(), key, []byte(tc.value)); err != nil {
			t.Fatal(err)
		}
		rec, err := out.Recover(context.Background(), key, func(string) bool { return true })
		if rec != nil || !errors.Is(err, toolrpc.ErrOutcomeUnknown) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("record %s: %+v, %v; want unknown, saying %q", tc.value, rec, err, tc.want)
		}
		if !strings.Contains(err.Error(), key) && !strings.Contains(tc.want, "no frame") {
			t.Errorf("record %s: error %v does not name key %s", tc.value, err, key)
		}
	}
}
