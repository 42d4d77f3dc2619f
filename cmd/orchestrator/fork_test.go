package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// TestForkWhileOwnerKilled has an orchestrator process serve a session,
// kills it (SIGKILL: its partitions stay its own until their leases end),
// and forks the session through another orchestrator at once: the fork
// reads only the stored records, so it needs nothing of the dead owner;
// the new session then answers like any other, once its owner loaded it.
func TestForkWhileOwnerKilled(t *testing.T) {
	s := bustest.MustRunNATS(t)
	url := s.ClientURL()
	cmd, logs, wait := startLogged(t, "--nats-url "+url+" --http 127.0.0.1:0 --lease-ttl 2s", "orchestrator serving")
	nc := bustest.MustConnect(t, s)
	subjects, _ := bus.NewSubjects("")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, text := range []string{"echo one", "echo two"} {
		if _, err := client.Ask(ctx, nc, subjects, "default", "s1", text, nil); err != nil {
			t.Fatalf("ask: %v\n%s", err, logs)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wait()

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	o, err := orchestrator.New(bustest.MustConnect(t, s), orchestrator.Config{
		Model: llm.Offline{}, ModelName: llm.OfflineName, Logger: quiet, Durable: true, LeaseTTL: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		o.Close(cctx)
	})
	m, err := nc.RequestWithContext(ctx, timetravel.Subject(subjects, "default", "s1"), []byte(`{"new_session":"s2"}`))
	if err != nil {
		t.Fatal(err)
	}
	var rep timetravel.Reply
	if err := json.Unmarshal(m.Data, &rep); err != nil || rep.Error != "" || rep.Forked == nil {
		t.Fatalf("fork reply %q: %v", m.Data, err)
	}
	// Two runs of user message and run end at least.
	if rep.Forked.Records < 4 {
		t.Fatalf("forked %d records, want both runs", rep.Forked.Records)
	}
	final, err := client.Ask(ctx, nc, subjects, "default", "s2", "echo three", nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.StopReason != agentfleet.StopReasonStop || !strings.Contains(agentfleet.JoinText(final.Content), "echo") {
		t.Fatalf("the fork answered %+v", final)
	}
}
