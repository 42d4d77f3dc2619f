package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/history"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPausedLeaderWritesNothingAfterTakeover pauses the active orchestrator
// (SIGSTOP) in the middle of a run for longer than the leader TTL, so that
// the standby takes over and resumes the run, and then lets it go on
// (SIGCONT). The paused one must write nothing to the history after the new
// leader's first write, must not take the lead back, and must not exit: it
// stands by.
func TestPausedLeaderWritesNothingAfterTakeover(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	toolStart, _ := nc.SubscribeSync("agent.events.default.sb.tool.start")
	resumed, _ := nc.SubscribeSync("agent.events.default.sb.run.resumed")
	out, _ := nc.SubscribeSync("agent.out.default.sb")
	nc.Flush()
	// The worker is not paused with the leader: a process of its own (here,
	// this one), as tool workers are.
	w, err := worker.Start(bustest.MustConnect(t, srv), worker.Config{Name: "sleeper", Tools: []string{"sleep"}, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	args := "--nats-url " + srv.ClientURL() + " --workers 0 --ack-wait 2s --leader-ttl 1s --shutdown-timeout 200ms --log-level warn --http 127.0.0.1:0"
	first := startOrchestrator(t, args)
	var kv jetstream.KeyValue
	bustest.Eventually(t, "the first orchestrator to lead", func() bool {
		var err error
		if kv == nil {
			if kv, err = js.KeyValue(ctx, "AGENT_LEADER"); err != nil {
				return false
			}
		}
		_, err = kv.Get(ctx, "leader")
		return err == nil
	})
	// The leader takes the lead before it makes the input stream: a message
	// published in between would be stored nowhere.
	bustest.Eventually(t, "the input stream", func() bool {
		_, err := js.Stream(ctx, "AGENT_INPUT")
		return err == nil
	})
	e, _ := kv.Get(ctx, "leader")
	firstID := string(e.Value())
	startOrchestrator(t, args)

	if err := nc.Publish("agent.in.default.sb", []byte(`{"content":"sleep 2000","id":"sb-1"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := toolStart.NextMsg(20 * time.Second); err != nil {
		t.Fatalf("no tool.start: %v", err)
	}
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := true
	defer func() {
		if paused {
			first.Process.Signal(syscall.SIGCONT)
		}
	}()
	bustest.Eventually(t, "the standby to take the lead", func() bool {
		e, err := kv.Get(ctx, "leader")
		return err == nil && string(e.Value()) != firstID
	})
	if _, err := resumed.NextMsg(20 * time.Second); err != nil {
		t.Fatalf("the new leader did not resume the run: %v", err)
	}
	store, err := history.Open(ctx, js, mustSubjects(t), "", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var oldWriter string
	bustest.Eventually(t, "the new leader's first write", func() bool {
		st, err := store.Load(ctx, "default", "sb")
		if err != nil || len(st.Records) == 0 {
			return false
		}
		oldWriter = st.Records[0].Writer
		for _, r := range st.Records {
			if r.Writer != oldWriter {
				return true
			}
		}
		return false
	})
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	paused = false
	if _, err := out.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("no final message for the resumed run: %v", err)
	}
	// More input after the paused one woke up: only the new leader serves it.
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
	takeover := -1
	for i, r := range st.Records {
		if takeover < 0 && r.Writer != oldWriter {
			takeover = i
		}
		if takeover >= 0 && r.Writer == oldWriter {
			t.Errorf("record %d (run %s) written by the paused orchestrator after the new leader's first write (record %d)", r.Seq, r.RunID, st.Records[takeover].Seq)
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
	if e, err := kv.Get(ctx, "leader"); err != nil || string(e.Value()) == firstID {
		t.Errorf("the paused orchestrator leads again (%v)", err)
	}
	if state := procState(t, first.Process.Pid); state == "Z" || state == "X" {
		t.Errorf("the paused orchestrator exited (state %s); it should stand by", state)
	}
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
