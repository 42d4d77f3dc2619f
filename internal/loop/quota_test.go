package loop_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// TestRequestCarriesPriorityAndEstimate: each model request carries the
// run's priority (its message's, else the agent's) and a token estimate,
// and an event the model adapter notifies (model.waiting) comes among the
// run's events, envelope filled in.
func TestRequestCarriesPriorityAndEstimate(t *testing.T) {
	waiting := func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		loop.Notify(ctx, &agentfleet.Event{Type: agentfleet.EventModelWaiting, Model: "m", Reason: "paused", Priority: req.Priority})
		return say("a")(ctx, req, onDelta)
	}
	sc := &script{steps: []step{waiting, say("b")}}
	s, ev := newSession(t, sc, loop.Config{Priority: agentfleet.PriorityBatch})
	wait(t, s.Send(agentfleet.NewUserMessage("a long enough question to estimate")))
	m := agentfleet.NewUserMessage("now")
	m.Priority = agentfleet.PriorityInteractive
	wait(t, s.Send(m))
	if got := sc.request(0).Priority; got != agentfleet.PriorityBatch {
		t.Errorf("first run's priority %q, want the agent's batch", got)
	}
	if got := sc.request(1).Priority; got != agentfleet.PriorityInteractive {
		t.Errorf("second run's priority %q, want its message's interactive", got)
	}
	if sc.request(0).EstimatedTokens <= 0 {
		t.Errorf("estimate %d, want > 0", sc.request(0).EstimatedTokens)
	}
	var found *agentfleet.Event
	for _, e := range ev.list() {
		if e.Type == agentfleet.EventModelWaiting {
			found = &e
		}
	}
	if found == nil || found.RunID == "" || found.Seq == 0 || found.Priority != agentfleet.PriorityBatch {
		t.Errorf("model.waiting %+v, want one in the run's sequence", found)
	}
	// Outside a run's model call, Notify does nothing.
	loop.Notify(context.Background(), &agentfleet.Event{Type: agentfleet.EventModelWaiting})
}
