package orchestrator_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// TestWorkerFencedSessionStepsDown makes the worker see a later claim of a
// session's partition (a call from an owner at a far higher epoch) before
// the orchestrator, which owns the partition in its table at a lower epoch,
// runs a tool call of that session. The worker refuses the orchestrator's
// call as fenced and the tool does not run for it; the session steps down
// as on a fenced history write: its run stores neither the call's result
// nor an end, and no final message is published for it.
func TestWorkerFencedSessionStepsDown(t *testing.T) {
	var ran atomic.Int64
	fenced := make(chan struct{}, 64)
	effect := tool("effect", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ran.Add(1)
		return agentfleet.TextResult("done"), nil
	})
	// The model asks for the call every time, as it would when the session
	// comes back: a try may reach one model call or two before it steps
	// down (the refusal is a tool result until the step-down lands), so
	// the script does not count on where the second try starts.
	steps := make([]step, 8)
	for i := range steps {
		steps[i] = use(`effect {}`)
	}
	model := newScript().on("z", steps...)
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{
		Tools: []*agentfleet.Tool{effect},
		Observe: func(tool, outcome string, _ time.Duration) {
			if outcome == "fenced" {
				select {
				case fenced <- struct{}{}:
				default:
				}
			}
		},
	})
	bustest.Eventually(t, "the orchestrator to own every partition", func() bool { return len(f.orch.Partitions()) == bus.Partitions })

	// The later owner's call reaches the worker first.
	later, err := toolrpc.NewToolClient(bustest.MustConnect(t, f.srv), toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	fence := ownership.Fence{Partition: bus.Partition("default", "z"), Owner: "later-owner", Epoch: 1 << 60}
	if _, err := later.Execute(context.Background(), &toolrpc.Call{ID: "later", Name: "effect", Args: map[string]any{}, Timeout: 10 * time.Second, Fence: fence}, func(any) {}); err != nil {
		t.Fatalf("the later owner's call: %v", err)
	}

	out := outs(t, f.nc, "default", "z")
	publish(t, f.nc, "agent.in.default.z", "", `{"content":"do it","id":"u1"}`)
	select {
	case <-fenced:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never refused the orchestrator's call as fenced")
	}
	if got := ran.Load(); got != 1 {
		t.Errorf("the tool ran %d times, want 1 (the later owner's call only)", got)
	}
	// The session comes back and is refused again while this orchestrator
	// keeps its stale claim: a second refusal means the first step-down
	// is over, with what it stored.
	select {
	case <-fenced:
	case <-time.After(30 * time.Second):
		t.Fatal("the session's input was not left for another try")
	}
	st := loadHistory(t, f.nc, "default", "z")
	for _, m := range st.Messages() {
		if tr, ok := m.(*agentfleet.ToolResultMessage); ok {
			t.Errorf("a fenced call's result was stored: %q", agentfleet.JoinText(tr.Content))
		}
	}
	if n := len(st.Ended()); n != 0 {
		t.Errorf("%d runs ended, want 0: the fenced session must not end its run", n)
	}
	select {
	case m := <-out:
		t.Errorf("a final message of the fenced session: %q", agentfleet.JoinText(m.Content))
	default:
	}
	if got := ran.Load(); got != 1 {
		t.Errorf("the tool ran %d times, want 1", got)
	}
}
