package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var servingID = regexp.MustCompile(`orchestrator serving" id=([0-9a-f-]{36})`)

// TestDelegationKilled runs two orchestrator processes on the offline
// model, with boss asking researcher as a tool ("ask researcher: sleep
// 3s") in several sessions at once, and SIGKILLs one of them while the
// children's tool calls run: the owner of a parent whose child runs on the
// other process, and the owner of a child whose parent runs on the other.
// The survivor resumes what was cut, and, for every session, the store
// holds record by record one child run with one user message and one end,
// and one result for the parent's call; the client gets one final message.
func TestDelegationKilled(t *testing.T) {
	const sessions = 6
	for _, victim := range []string{"parent", "child"} {
		t.Run("owner of the "+victim, func(t *testing.T) {
			srv := bustest.MustRunNATS(t)
			nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			config := filepath.Join(t.TempDir(), "agents.yaml")
			os.WriteFile(config, []byte("agents:\n  - name: boss\n    agents: [researcher]\n  - name: researcher\n"), 0o644)
			sub := func(subject string) *nats.Subscription {
				s, err := nc.SubscribeSync(subject)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			parentStart, childStart, childTool := sub("agent.events.boss.*.run.start"), sub("agent.events.researcher.*.run.start"), sub("agent.events.researcher.*.tool.start")
			out := sub("agent.out.boss.*")
			nc.Flush()
			args := "--nats-url " + srv.ClientURL() + " --config " + config + " --workers 1 --ack-wait 1s --lease-ttl 1s --log-level info --http 127.0.0.1:0 --dashboard=false --serve-mcp=false"
			procs := map[string]*exec.Cmd{}
			var ids []string
			for range 2 {
				cmd, logs, _ := startLogged(t, args, "orchestrator serving")
				m := servingID.FindStringSubmatch(logs.String())
				if m == nil {
					t.Fatalf("no id in the log:\n%s", logs)
				}
				procs[m[1]] = cmd
				ids = append(ids, m[1])
			}
			// Both own their share before the asks, so that the owner of
			// every session is known.
			js, _ := jetstream.New(nc)
			owners := partition.Assign(ids, bus.Partitions)
			bustest.Eventually(t, "the partitions shared as the table says", func() bool {
				kv, err := js.KeyValue(context.Background(), "AGENT_PARTITIONS")
				if err != nil {
					return false
				}
				for p, want := range owners {
					e, err := kv.Get(context.Background(), strconv.Itoa(p))
					if err != nil || string(e.Value()) != want {
						return false
					}
				}
				return true
			})
			owner := func(agent, session string) string { return owners[bus.Partition(agent, session)] }
			for i := range sessions {
				if err := nc.Publish(fmt.Sprintf("agent.in.boss.k%d", i), []byte(fmt.Sprintf(`{"content":"ask researcher: sleep 3s","id":"k-%d"}`, i))); err != nil {
					t.Fatal(err)
				}
			}
			event := func(s *nats.Subscription, what string) agentfleet.Event {
				t.Helper()
				m, err := s.NextMsg(30 * time.Second)
				if err != nil {
					t.Fatalf("no %s: %v", what, err)
				}
				var e agentfleet.Event
				if err := json.Unmarshal(m.Data, &e); err != nil {
					t.Fatal(err)
				}
				return e
			}
			parentRun, childOf := map[string]string{}, map[string]string{} // by parent session
			for range sessions {
				e := event(parentStart, "run.start of boss")
				parentRun[e.Session] = e.RunID
				c := event(childStart, "run.start of researcher")
				childOf[c.Parent.Session] = c.Session
				event(childTool, "tool.start of researcher's sleep")
			}
			kill := ""
			for i := range sessions {
				ps := fmt.Sprintf("k%d", i)
				po, co := owner("boss", ps), owner("researcher", childOf[ps])
				if po != co {
					kill = po
					if victim == "child" {
						kill = co
					}
					t.Logf("session %s: parent on %s, child %s on %s; killing the %s's owner", ps, po, childOf[ps], co, victim)
					break
				}
			}
			if kill == "" {
				kill = owner("boss", "k0")
				t.Logf("every parent runs beside its child; killing the owner of k0")
			}
			killed := time.Now()
			if err := procs[kill].Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			finals := map[string]int{}
			for len(finals) < sessions {
				m, err := out.NextMsg(60 * time.Second)
				if err != nil {
					t.Fatalf("final messages after the kill: %v of %d sessions: %v", finals, sessions, err)
				}
				finals[m.Subject]++
				var final agentfleet.AssistantMessage
				json.Unmarshal(m.Data, &final)
				if got := agentfleet.JoinText(final.Content); final.StopReason != agentfleet.StopReasonStop || !strings.HasPrefix(got, "ask_researcher: ") || !strings.Contains(got, "slept 3000 ms") {
					t.Errorf("final on %s = %s %q", m.Subject, final.StopReason, got)
				}
			}
			t.Logf("%d final messages %v after the kill (lease TTL 1s, the children's sleep 3s)", sessions, time.Since(killed).Round(time.Millisecond))
			if m, err := out.NextMsg(time.Second); err == nil {
				t.Errorf("a second final message on %s: %s", m.Subject, m.Data)
			}
			// A child whose owner died before it stored anything of its run
			// (its calls all run again, so nothing had to be) starts again
			// from its input, with a run.start: the store, below, holds one
			// run of it.

			subjects, _ := bus.NewSubjects("")
			h, err := history.Open(context.Background(), js, subjects, "", history.Config{})
			if err != nil {
				t.Fatal(err)
			}
			load := func(agent, session string) *history.Loaded {
				st, err := h.Load(context.Background(), agent, session)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			for ps, cs := range childOf {
				// The child: one user message, from the parent's call, one
				// run, one end.
				users, ends, runs := 0, 0, map[string]bool{}
				for _, r := range load("researcher", cs).Records {
					runs[r.RunID] = true
					if r.Final != nil {
						ends++
					}
					if u, ok := r.Message.(*agentfleet.UserMessage); ok {
						users++
						if u.Parent == nil || u.Parent.Session != ps || u.Parent.RunID != parentRun[ps] {
							t.Errorf("child %s: its user message has parent %+v", cs, u.Parent)
						}
					}
				}
				if users != 1 || ends != 1 || len(runs) != 1 {
					t.Errorf("child %s of %s: the history holds %d user messages, %d ends, runs %v; want one of each", cs, ps, users, ends, runs)
				}
				// The parent: one result of its call, one end.
				results, pends := map[string]int{}, 0
				for _, r := range load("boss", ps).Records {
					if r.Final != nil {
						pends++
					}
					if tr, ok := r.Message.(*agentfleet.ToolResultMessage); ok {
						results[tr.ToolName+" "+tr.ToolCallID]++
					}
				}
				if len(results) != 1 || pends != 1 {
					t.Errorf("parent %s: the history holds results %v and %d ends; want one result of ask_researcher and one end", ps, results, pends)
				}
				for k, n := range results {
					if n != 1 || !strings.HasPrefix(k, "ask_researcher ") {
						t.Errorf("parent %s: result %s stored %d times", ps, k, n)
					}
				}
			}
		})
	}
}
