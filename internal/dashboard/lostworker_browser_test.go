package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
)

// The environment of a child worker process: its NATS URL, name, and
// whether its lookup hangs (the victim) or answers at once.
const (
	envChildURL  = "DASHBOARD_TEST_WORKER_URL"
	envChildName = "DASHBOARD_TEST_WORKER_NAME"
	envChildHang = "DASHBOARD_TEST_WORKER_HANG"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envChildURL); url != "" {
		childWorker(url, os.Getenv(envChildName), os.Getenv(envChildHang) != "")
		return
	}
	os.Exit(m.Run())
}

// childWorker serves lookup, an idempotent tool, until killed: the
// victim's call reports progress until it is killed, the survivor's
// answers at once.
func childWorker(url, name string, hang bool) {
	nc, err := bus.Connect(bus.ConnectConfig{URL: url, Name: name})
	if err != nil {
		os.Exit(2)
	}
	lookup := &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "lookup", Label: "lookup", Description: "test tool lookup",
		InputSchema: json.RawMessage(`{"type":"object"}`), Parallel: true, Annotations: agentfleet.Annotations{Idempotent: true}},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if !hang {
				return agentfleet.TextResult("found by " + name), nil
			}
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for n := 1; ; n++ {
				select {
				case <-ctx.Done():
					return nil, errors.New("lookup: interrupted")
				case <-tick.C:
					c.Progress(map[string]any{"ticks": n})
				}
			}
		})}
	if _, err := toolrpc.Serve(nc, toolrpc.ServerConfig{Name: name, Concurrency: 4, Heartbeat: 100 * time.Millisecond, Tools: []*agentfleet.Tool{lookup}}); err != nil {
		os.Exit(3)
	}
	select {}
}

// startWorker starts this test binary as a worker process serving lookup
// and returns once it announced itself on agent.fleet.
func startWorker(t *testing.T, nc *nats.Conn, url, name string, hang bool) *exec.Cmd {
	t.Helper()
	joined, err := nc.SubscribeSync("agent.fleet")
	if err != nil {
		t.Fatal(err)
	}
	defer joined.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildURL+"="+url, envChildName+"="+name)
	if hang {
		cmd.Env = append(cmd.Env, envChildHang+"=1")
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for {
		m, err := joined.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("worker %s did not join: %v", name, err)
		}
		var n fleet.FleetNotice
		if json.Unmarshal(m.Data, &n) == nil && n.Event == "joined" {
			return cmd
		}
	}
}

// TestDashboardLostWorkerRetry kills a real worker process (SIGKILL)
// while it runs an idempotent call that the page shows running; the
// orchestrator retries it on another worker process, and the run view
// shows the retry naming the lost worker, the second attempt, and the
// worker that answered.
func TestDashboardLostWorkerRetry(t *testing.T) {
	f := startFleet(t, dashboard.Options{ReadOnly: true})
	url := f.srv.ClientURL()
	victim := startWorker(t, f.nc, url, "victim", true)
	// The orchestrator knows lookup once its tool list says so.
	subjects, _ := bus.NewSubjects("")
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := f.nc.Request(subjects.AgentTools("default"), nil, 5*time.Second)
		var reply orchestrator.ToolsReply
		if err == nil && json.Unmarshal(m.Data, &reply) == nil && slices.ContainsFunc(reply.Tools, func(d agentfleet.ToolDef) bool { return d.Name == "lookup" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orchestrator does not list lookup: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // discovery runs in the orchestrator, which announces nothing a test can wait on
	}
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the replay", `document.body.dataset.replayed === 'true'`, 10*time.Second)
	show(t, ctx, "lost")
	f.send(t, "lost", "lookup x")
	waitJS(t, ctx, "the call running on the victim", `document.querySelector('#run[data-session="lost"][data-status="running"] .tool[data-tool="lookup"][data-outcome="running"] .progress')`, 20*time.Second)
	startWorker(t, f.nc, url, "survivor", false)
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the call answered after a retry", `document.querySelector('#run[data-session="lost"][data-status="stop"] .tool[data-tool="lookup"][data-outcome="ok"] .retry')`, 60*time.Second)
	type shown struct {
		Retry   string `json:"retry"`
		Attempt string `json:"attempt"`
		Worker  string `json:"worker"`
	}
	got := evalJS[shown](t, ctx, `(() => { const d = document.querySelector('#run .tool[data-tool="lookup"]'); return {
		retry: d.querySelector('.retry').textContent, attempt: d.querySelector('.attempt.retried').textContent,
		worker: d.querySelector('.worker code').textContent }; })()`)
	if !contains(got.Retry, "attempt 2 after worker victim/") || !contains(got.Retry, "was lost") {
		t.Errorf("the retry shows as %q, want attempt 2 after the lost victim", got.Retry)
	}
	if got.Attempt != "attempt 2" || !contains(got.Worker, "survivor/") {
		t.Errorf("the call shows %q on %q, want attempt 2 on the survivor", got.Attempt, got.Worker)
	}
}
