package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// The test binary doubles as the agentctl program, so that exit codes are
// those of a real process.
func init() {
	if args, ok := os.LookupEnv("AGENTCTL_CHILD_ARGS"); ok {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			panic(err)
		}
		os.Args = append([]string{"agentctl"}, argv...)
		main()
		os.Exit(0)
	}
}

// agentctl runs the agentctl program as a child process and returns its
// output and exit code.
func agentctl(t *testing.T, url string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	argv, _ := json.Marshal(append([]string{"--nats-url", url}, args...))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTCTL_CHILD_ARGS="+string(argv))
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errs.String(), code
}

// TestAgentTools: tools <agent> shows what that agent sees, the subset of
// the fleet its profile allows and the orchestrator's own list_tools; an
// unknown agent fails naming the agents.
func TestAgentTools(t *testing.T) {
	url := startFleetWith(t, []orchestrator.Profile{
		{Name: "math", Tools: []string{"calculator"}},
		{Name: "clock", Tools: []string{"get_*"}},
	})
	stdout, stderr, code := agentctl(t, url, "tools", "--json", "math")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var defs []agentfleet.ToolDef
	if err := json.Unmarshal([]byte(stdout), &defs); err != nil {
		t.Fatalf("--json output %q: %v", stdout, err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if got, want := strings.Join(names, ","), "list_tools,calculator"; got != want {
		t.Errorf("math sees %s, want %s", got, want)
	}
	stdout, stderr, code = agentctl(t, url, "tools", "clock")
	if code != 0 || !strings.Contains(stdout, "get_time — ") || !strings.Contains(stdout, "get_weather — ") || strings.Contains(stdout, "calculator") {
		t.Errorf("tools clock: exit %d, stdout:\n%s\nstderr %s", code, stdout, stderr)
	}
	_, stderr, code = agentctl(t, url, "tools", "nobody")
	if code != 1 || !strings.Contains(stderr, `unknown agent "nobody" (agents: clock, math)`) {
		t.Errorf("tools nobody: exit %d, stderr %q", code, stderr)
	}
}

// TestRefused: an abort of a session with no run, or of an unknown agent,
// exits 1 with the orchestrator's reason; an abort of a running run exits
// 0; a retried ask --id gets the stored answer and prints it as an answer.
func TestRefused(t *testing.T) {
	url := startFleet(t)
	_, stderr, code := agentctl(t, url, "abort", "default", "idle")
	if code != 1 || !strings.Contains(stderr, "session idle of agent default has no active run to abort") {
		t.Errorf("abort without a run: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = agentctl(t, url, "abort", "nobody", "s")
	if code != 1 || !strings.Contains(stderr, `unknown agent "nobody"`) {
		t.Errorf("abort of an unknown agent: exit %d, stderr %q", code, stderr)
	}

	// A run that waits on a tool, aborted.
	tail := newProg(t, url, nil, "tail", "default", "busy")
	done := make(chan error, 1)
	ctx, stop := context.WithCancel(context.Background())
	go func() { done <- tail.Run(ctx) }()
	tail.stderr.waitFor(t, "following agent.events.", 1)
	if _, stderr, code := agentctl(t, url, "send", "default", "busy", "sleep 60000"); code != 0 {
		t.Fatalf("send: exit %d, stderr %s", code, stderr)
	}
	tail.stdout.waitFor(t, " tool.start sleep ", 1)
	if _, stderr, code := agentctl(t, url, "abort", "default", "busy", "enough"); code != 0 {
		t.Errorf("abort of a running run: exit %d, stderr %q", code, stderr)
	}
	tail.stdout.waitFor(t, " run.end aborted", 1)
	stop()
	<-done

	first, stderr, code := agentctl(t, url, "ask", "--id", "q-1", "default", "again", "echo once")
	if code != 0 || first != "echo: once\n" {
		t.Fatalf("ask: exit %d, stdout %q, stderr %q", code, first, stderr)
	}
	again, stderr, code := agentctl(t, url, "ask", "--id", "q-1", "default", "again", "echo once")
	if code != 0 || again != first || stderr != "" {
		t.Errorf("retried ask: exit %d, stdout %q, stderr %q; want the stored answer %q", code, again, stderr, first)
	}
}
