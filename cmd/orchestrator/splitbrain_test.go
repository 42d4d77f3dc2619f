package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPausedOwnerWritesNothingAfterTakeover runs two orchestrators and
// pauses (SIGSTOP) the one that owns a session's partition in the middle of
// a run, for longer than the lease TTL, so that the other takes the
// partition over and resumes the run (or runs it anew from its input, when
// the paused one had stored nothing of it: its only call is idempotent, so
// its records waited in the writer's buffer); then it lets the paused one go on
// (SIGCONT). The paused one must write nothing to the session's history
// after the new owner's first write, except for runs that began after the
// resumed run ended (once it has joined again, the table may give it the
// partition back); it must not exit.
func TestPausedOwnerWritesNothingAfterTakeover(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	toolStart, _ := nc.SubscribeSync("agent.events.default.sb.tool.start")
	out, _ := nc.SubscribeSync("agent.out.default.sb")
	nc.Flush()
	// The worker is not paused with the owner: a process of its own (here,
	// this one), as tool workers are.
	w, err := worker.Start(bustest.MustConnect(t, srv), worker.Config{Name: "sleeper", Tools: []string{"sleep"}, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	args := "--nats-url " + srv.ClientURL() + " --workers 0 --ack-wait 2s --lease-ttl 1s --shutdown-timeout 200ms --log-level warn --http 127.0.0.1:0"
	procs := map[string]*exec.Cmd{}
	members := func() []string {
		kv, err := js.KeyValue(ctx, "AGENT_MEMBERS")
		if err != nil {
			return nil
		}
		keys, _ := kv.Keys(ctx)
		return keys
	}
	for range 2 {
		cmd := startOrchestrator(t, args)
		bustest.Eventually(t, "the orchestrator to join", func() bool { return len(members()) == len(procs)+1 })
		for _, id := range members() {
			if procs[id] == nil {
				procs[id] = cmd
			}
		}
	}
	parts, err := js.KeyValue(ctx, "AGENT_PARTITIONS")
	if err != nil {
		t.Fatal(err)
	}
	owners := func() map[string]int {
		n := map[string]int{}
		for p := range bus.Partitions {
			if e, err := parts.Get(ctx, strconv.Itoa(p)); err == nil {
				n[string(e.Value())]++
			}
		}
		return n
	}
	bustest.Eventually(t, "32 partitions each", func() bool {
		n := owners()
		return len(n) == 2 && n[members()[0]] == 32
	})
	if err := nc.Publish("agent.in.default.sb", []byte(`{"content":"sleep 2000","id":"sb-1"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := toolStart.NextMsg(20 * time.Second); err != nil {
		t.Fatalf("no tool.start: %v", err)
	}
	key := strconv.Itoa(bus.Partition("default", "sb"))
	e, err := parts.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	ownerID := string(e.Value())
	owner := procs[ownerID]
	if err := owner.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// Only the new owner emits from here on.
	runs, _ := nc.SubscribeSync("agent.events.default.sb.run.>")
	paused := true
	defer func() {
		if paused {
			owner.Process.Signal(syscall.SIGCONT)
		}
	}()
	bustest.Eventually(t, "the other orchestrator to take the partition over", func() bool {
		e, err := parts.Get(ctx, key)
		return err == nil && string(e.Value()) != ownerID
	})
	for {
		m, err := runs.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("the new owner did not resume the run nor start it anew: %v", err)
		}
		if strings.HasSuffix(m.Subject, ".run.resumed") || strings.HasSuffix(m.Subject, ".run.start") {
			break
		}
	}
	t.Logf("run resumed %v after the owner was paused (lease TTL 1s)", time.Since(stopped).Round(time.Millisecond))
	store, err := history.Open(ctx, js, mustSubjects(t), "", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	oldWriter := ownerID
	bustest.Eventually(t, "the new owner's first write", func() bool {
		st, err := store.Load(ctx, "default", "sb")
		if err != nil || len(st.Records) == 0 {
			return false
		}
		for _, r := range st.Records {
			if r.Writer != oldWriter {
				return true
			}
		}
		return false
	})
	if err := owner.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	paused = false
	if _, err := out.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("no final message for the resumed run: %v", err)
	}
	// More input after the paused one woke up.
	if err := nc.Publish("agent.in.default.sb", []byte(`{"content":"sleep 300","id":"sb-2"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := out.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("no final message for the second message: %v", err)
	}
	st, err := store.Load(ctx, "default", "sb")
	if err != nil {
		t.Fatal(err)
	}
	takeover, firstEnd := -1, -1
	firstRun := st.Records[0].RunID
	for i, r := range st.Records {
		if takeover < 0 && r.Writer != oldWriter {
			takeover = i
		}
		if r.Final != nil && r.RunID == firstRun && firstEnd < 0 {
			firstEnd = i
		}
		if takeover >= 0 && r.Writer == oldWriter && (r.RunID == firstRun || firstEnd < 0) {
			t.Errorf("record %d (run %s) written by the paused orchestrator after the new owner's first write (record %d)", r.Seq, r.RunID, st.Records[takeover].Seq)
		}
	}
	for run, n := range st.Ended() {
		if n != 1 {
			t.Errorf("run %s has %d end records", run, n)
		}
	}
	if len(st.Ended()) != 2 {
		t.Errorf("%d runs ended, want 2", len(st.Ended()))
	}
	if state := procState(t, owner.Process.Pid); state == "Z" || state == "X" {
		t.Errorf("the paused orchestrator exited (state %s); it should join again", state)
	}
	bustest.Eventually(t, "the paused orchestrator to join again", func() bool { return slices.Contains(members(), ownerID) })
}

// procState returns the state letter of process pid from /proc (R, S, T,
// Z...), or "X" if it is gone.
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "X"
	}
	// pid (comm) state ...: comm may hold spaces, so look after the last ')'.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	if f := strings.Fields(rest); len(f) > 0 {
		return f[0]
	}
	return "X"
}

func mustSubjects(t *testing.T) bus.Subjects {
	t.Helper()
	s, err := bus.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
