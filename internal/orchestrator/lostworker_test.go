package orchestrator_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go"
)

// TestLostWorkerRetryLogged cuts off the worker running a call to an
// idempotent tool while another serves it too: the call is retried on the
// other, and the orchestrator's log has one info line naming the tool, the
// lost worker and the attempt.
func TestLostWorkerRetryLogged(t *testing.T) {
	inCall := make(chan struct{})
	blocking := tool("lookup", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		close(inCall)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	logs := new(syncBuffer)
	f := startFleet(t, orchestrator.Config{
		Model:  newScript().on("lost", use(`lookup {"q":"a"}`), sayResults()),
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	victimConn := bustest.MustConnect(t, f.srv)
	victim, err := toolrpc.Serve(victimConn, toolrpc.ServerConfig{Name: "victim", Tools: []*agentfleet.Tool{blocking}, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Stop()
	bustest.Eventually(t, "the agent to see lookup", func() bool {
		_, ok := find(f.orch, "default", "lookup")
		return ok
	})
	// The orchestrator knows which worker runs the call once that worker's
	// acknowledgement (sent after bus.AckDelay) has come: it goes to an
	// inbox, which this connection watches too.
	acked := make(chan struct{})
	var once sync.Once
	watch, err := f.nc.Subscribe("_INBOX.>", func(m *nats.Msg) {
		if fr, err := wire.DecodeFrame(m.Data); err == nil && fr.T == wire.FrameAck && fr.Worker == victim.Name() {
			once.Do(func() { close(acked) })
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Unsubscribe()
	f.nc.Flush()
	answer := make(chan *agentfleet.AssistantMessage, 1)
	go func() { answer <- f.ask(t, "default", "lost", `{"content":"look it up"}`) }()
	<-inCall
	select {
	case <-acked:
	case <-time.After(10 * time.Second):
		t.Fatal("the victim did not acknowledge the call")
	}
	f.addWorker(t, toolrpc.ServerConfig{Name: "survivor", Tools: []*agentfleet.Tool{echo("lookup")}})
	victimConn.Close() // no more heartbeats: the call's worker is lost
	a := <-answer
	if got := agentfleet.JoinText(a.Content); !strings.HasPrefix(got, "lookup=lookup") {
		t.Errorf("answer = %q, want the survivor's result", got)
	}
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="retrying tool call"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "tool=lookup worker="+victim.Name()+" attempt=2") {
		t.Errorf("retry log lines = %q, want one naming lookup, %s and attempt 2", lines, victim.Name())
	}
}
