package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busfleet "github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/scripts"
	"github.com/nats-io/nats.go"
)

// The test binary doubles as the toolworker program: a child started with
// TOOLWORKER_CHILD_ARGS runs main with those arguments.
func TestMain(m *testing.M) {
	scripts.RunChildIfRequested()
	if args, ok := os.LookupEnv("TOOLWORKER_CHILD_ARGS"); ok {
		os.Args = append([]string{"toolworker"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startChild runs a toolworker process and waits until it has joined.
func startChild(t *testing.T, nc *nats.Conn, args string) *exec.Cmd {
	t.Helper()
	cmd, _ := startChildID(t, nc, args)
	return cmd
}

// startChildID is startChild that also returns the worker's service id.
func startChildID(t *testing.T, nc *nats.Conn, args string) (*exec.Cmd, string) {
	t.Helper()
	joined, err := nc.SubscribeSync("agent.fleet")
	if err != nil {
		t.Fatal(err)
	}
	defer joined.Unsubscribe()
	nc.Flush()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TOOLWORKER_CHILD_ARGS="+args)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for {
		m, err := joined.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("worker did not join: %v", err)
		}
		var n busfleet.FleetNotice
		if json.Unmarshal(m.Data, &n) == nil && n.Event == "joined" {
			return cmd, n.ID
		}
	}
}

func sleepCall(ms int, timeout time.Duration) *pipeline.Prepared {
	args := map[string]any{"ms": ms}
	return &pipeline.Prepared{
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "sleep"}},
		Call: agentfleet.ToolCall{ID: "call-sleep", Name: "sleep", Arguments: args}, Args: args, Timeout: timeout,
	}
}

// TestKilledWorkerIsDetectedByHeartbeats kills a worker process with
// SIGKILL in the middle of a call: the call fails as worker_lost after a few
// heartbeat intervals, long before its 30 s timeout.
func TestKilledWorkerIsDetectedByHeartbeats(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	child := startChild(t, nc, "--nats-url "+srv.ClientURL()+" --tools sleep --heartbeat 100ms --name victim")
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	progress := make(chan struct{}, 1)
	type result struct {
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, err := fleetexec.Executor{Client: client}.Execute(context.Background(), sleepCall(60_000, 30*time.Second), func(any) {
			select {
			case progress <- struct{}{}:
			default:
			}
		})
		done <- result{err, time.Now()}
	}()
	<-progress // the call runs on the worker
	killed := time.Now()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !errors.Is(r.err, pipeline.ErrWorkerLost) || !strings.Contains(r.err.Error(), "worker victim/") {
		t.Fatalf("err = %v, want worker lost naming the worker", r.err)
	}
	if d := r.at.Sub(killed); d > 10*time.Second {
		t.Errorf("loss detected after %v; the heartbeat is 100ms", d)
	}
	t.Logf("worker loss detected %v after SIGKILL", r.at.Sub(killed).Round(time.Millisecond))
}

// TestSIGTERMDrains sends SIGTERM during a call: the worker finishes the
// call, stops taking new ones and exits 0.
func TestSIGTERMDrains(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	child := startChild(t, nc, "--nats-url "+srv.ClientURL()+" --tools sleep --heartbeat 100ms")
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	progress := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		res, err := fleetexec.Executor{Client: client}.Execute(context.Background(), sleepCall(400, 30*time.Second), func(any) {
			select {
			case progress <- struct{}{}:
			default:
			}
		})
		if err == nil && agentfleet.JoinText(res.Content) != "slept 400 ms" {
			err = errors.New("unexpected result " + agentfleet.JoinText(res.Content))
		}
		done <- err
	}()
	<-progress
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("call in flight during SIGTERM: %v", err)
	}
	if err := child.Wait(); err != nil {
		t.Errorf("worker exit: %v, want status 0", err)
	}
	// Nothing serves sleep any more.
	// A long deadline: no responders comes at once, and a busy machine must
	// not turn it into a timeout.
	_, err = fleetexec.Executor{Client: client}.Execute(context.Background(), sleepCall(1, 30*time.Second), func(any) {})
	if !errors.Is(err, pipeline.ErrNoResponders) {
		t.Errorf("after drain: %v, want no responders", err)
	}
}

// TestSIGTERMDrainsEveryCallInFlight sends SIGTERM while many calls run:
// every one of them gets its result, the worker announces that it left, and
// it exits 0. The results are the last frames the worker publishes before it
// exits, so they are lost unless it flushes them.
func TestSIGTERMDrainsEveryCallInFlight(t *testing.T) {
	const calls = 48
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	child := startChild(t, nc, "--nats-url "+srv.ClientURL()+" --tools sleep --heartbeat 100ms --name drained")
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	fleet, err := nc.SubscribeSync("agent.fleet")
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Unsubscribe()

	running := make(chan struct{}, calls)
	done := make(chan error, calls)
	for i := range calls {
		go func() {
			call := sleepCall(400, 30*time.Second) // all end at once, at the exit
			call.Call.ID = fmt.Sprintf("call-%d", i)
			var once sync.Once
			res, err := fleetexec.Executor{Client: client}.Execute(context.Background(), call, func(any) {
				once.Do(func() { running <- struct{}{} })
			})
			if err == nil && agentfleet.JoinText(res.Content) != "slept 400 ms" {
				err = errors.New("unexpected result " + agentfleet.JoinText(res.Content))
			}
			done <- err
		}()
	}
	for range calls {
		<-running // every call runs on the worker
	}
	if err := child.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range calls {
		if err := <-done; err != nil {
			t.Errorf("call in flight during SIGTERM: %v", err)
		}
	}
	if err := child.Wait(); err != nil {
		t.Errorf("worker exit: %v, want status 0", err)
	}
	for {
		m, err := fleet.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("the worker did not announce that it left: %v", err)
		}
		var n busfleet.FleetNotice
		if json.Unmarshal(m.Data, &n) == nil && n.Event == "left" && n.Service == "drained" {
			break
		}
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		args string
		want string
	}{
		{"--concurrency 0", "--concurrency 0: must be at least 1"},
		{"--log-level loud", `--log-level "loud"`},
		{"extra", `unexpected argument "extra"`},
		{"--script-memory 12x", `"12x" is not a size: give bytes, or a number with KiB, MiB or GiB, such as 64MiB`},
		{"--script-isolation jail", `--script-isolation "jail": want none or process`},
		{"--script-memory-total 32MiB", "--script-memory-total 33554432 bytes is smaller than the budget of one call, --script-memory 67108864 bytes: no scripted call could run"},
		{"--script-memory 128MiB --script-memory-total 64MiB", "--script-memory-total 67108864 bytes is smaller than the budget of one call, --script-memory 134217728 bytes"},
		{"--stream-replicas 0", "--stream-replicas 0: JetStream keeps 1 to 5 replicas"},
		{"--stream-replicas 7", "--stream-replicas 7: JetStream keeps 1 to 5 replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			m := NewMain()
			m.Stderr = new(strings.Builder)
			err := m.ParseFlags(strings.Fields(tt.args))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestScriptFlags(t *testing.T) {
	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags(strings.Fields("--scripts --script-memory 32MiB --script-isolation process --script-process-memory 2GiB")); err != nil {
		t.Fatal(err)
	}
	if m.ScriptMemory != 32<<20 || m.Isolation != "process" || m.ChildMemory != 2<<30 || m.ScriptMemoryTotal != 256<<20 {
		t.Errorf("memory %d, isolation %q, child memory %d, total %d; want 32 MiB, process, 2 GiB, 256 MiB", m.ScriptMemory, m.Isolation, m.ChildMemory, m.ScriptMemoryTotal)
	}
	m = NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags(strings.Fields("--scripts --script-memory-total 1GiB")); err != nil || m.ScriptMemoryTotal != 1<<30 {
		t.Errorf("--script-memory-total 1GiB: %v, total %d", err, m.ScriptMemoryTotal)
	}
}

// TestLostWorkerRetryPolicy kills the worker running a call while another
// worker serves the same tool: a call to an idempotent tool completes on the
// other worker; a call to a tool that is not idempotent ends at once with an
// error result saying its outcome is unknown.
//
// Both workers serve before the call, and the one that acks it is killed:
// the test waits on the ack, not on a clock, so a slow start of either
// process cannot let the call finish before the kill.
func TestLostWorkerRetryPolicy(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(map[bool]string{true: "idempotent", false: "not idempotent"}[idempotent], func(t *testing.T) {
			srv := bustest.MustRunNATS(t)
			nc := bustest.MustConnect(t, srv)
			// The call's frames, seen from another connection: the ack
			// names the worker that took the call.
			acks := make(chan string, 16)
			watch, err := bustest.MustConnect(t, srv).Subscribe("_INBOX.>", func(m *nats.Msg) {
				if f, err := wire.DecodeFrame(m.Data); err == nil && f.T == wire.FrameAck {
					select {
					case acks <- f.Worker:
					default:
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Unsubscribe()
			args := "--nats-url " + srv.ClientURL() + " --tools sleep --heartbeat 100ms --name "
			workers := map[string]*exec.Cmd{"a": startChild(t, nc, args+"a"), "b": startChild(t, nc, args+"b")}
			client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{RetryBackoff: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			// The kill follows the ack by the time a signal takes; the
			// sleep only has to outlast that, on a busy machine too. An
			// idempotent call sleeps as long again on the survivor.
			call := sleepCall(3000, 60*time.Second)
			call.Tool.Annotations.Idempotent = idempotent
			progress := make(chan any, 256)
			type result struct {
				res *agentfleet.ToolResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := fleetexec.Executor{Client: client}.Execute(context.Background(), call, func(p any) {
					select {
					case progress <- p:
					default:
					}
				})
				done <- result{res, err}
			}()
			var victim, survivor string
			select {
			case w := <-acks:
				victim, _, _ = strings.Cut(w, "/")
			case r := <-done:
				t.Fatalf("the call ended before any worker acked it: %v, %v", r.res, r.err)
			}
			survivor = map[string]string{"a": "b", "b": "a"}[victim]
			if survivor == "" {
				t.Fatalf("the call was acked by %q, want worker a or b", victim)
			}
			if err := workers[victim].Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if idempotent {
				if r.err != nil {
					t.Fatalf("idempotent call: %v", r.err)
				}
				if !strings.HasPrefix(r.res.Worker, survivor+"/") || r.res.Attempts != 2 {
					t.Errorf("result from %s after %d attempts, want %s (the survivor) after 2", r.res.Worker, r.res.Attempts, survivor)
				}
				// The retry names the lost worker, for the orchestrator's log.
				var retry map[string]any
				for len(progress) > 0 {
					if p, ok := (<-progress).(map[string]any); ok && p["retry"] != nil {
						retry = p["retry"].(map[string]any)
					}
				}
				if w, _ := retry["worker"].(string); !strings.HasPrefix(w, victim+"/") || retry["attempt"] != 2 {
					t.Errorf("retry progress = %v, want attempt 2 naming the lost worker %s", retry, victim)
				}
				return
			}
			if !errors.Is(r.err, pipeline.ErrWorkerLost) || !strings.Contains(r.err.Error(), "outcome is unknown and it was not retried") {
				t.Errorf("err = %v, want worker lost, not retried", r.err)
			}
		})
	}
}

// TestKilledWorkerLeavesTheFleet kills a worker process with SIGKILL: it
// says nothing, and an orchestrator's fleet watcher drops its tools after it
// missed a few beats (the default beat is 1 s): within 5 s, not at the next
// round.
func TestKilledWorkerLeavesTheFleet(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	changed := make(chan []agentfleet.ToolDef, 16)
	subjects, _ := bus.NewSubjects("")
	child := startChild(t, nc, "--nats-url "+srv.ClientURL()+" --tools echo --name doomed")
	fleet, err := busfleet.WatchFleet(context.Background(), nc, subjects, busfleet.FleetConfig{OnChange: func(d []agentfleet.ToolDef) { changed <- d }})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	if len(fleet.Tools()) != 1 {
		t.Fatalf("tools before the kill: %v", fleet.Tools())
	}
	killed := time.Now()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case defs := <-changed:
			if len(defs) > 0 {
				continue
			}
			if d := time.Since(killed); d > 5*time.Second {
				t.Errorf("the killed worker's tools went after %v, want within 5s", d)
			} else {
				t.Logf("the killed worker's tools went after %v", d.Round(time.Millisecond))
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatalf("the killed worker's tools are still listed after 10s: %v", fleet.Tools())
		}
	}
}
