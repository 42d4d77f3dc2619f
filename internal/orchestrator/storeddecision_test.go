package orchestrator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestStoredBadDecisions publishes bad decisions without a reply subject,
// so that they reach the owner only through the approve stream: each is
// refused with an error event saying what is wrong, and none is left in the
// input stream. A request whose reply subject is refused is answered by
// nobody; its kept copy still reaches the owner.
func TestStoredBadDecisions(t *testing.T) {
	f := approvalFleet(t, newScript())
	for _, c := range []struct{ name, subject, payload, want string }{
		{"bad json", "agent.approve.default.s1", `{"tool_call_id":`, "decision payload is not a valid object"},
		{"no approve", "agent.approve.default.s2", `{"tool_call_id":"c1"}`, `decision payload has no "approve"`},
		{"unknown field", "agent.approve.default.s3", `{"tool_call_id":"c1","approve":true,"aprove":true}`, `unknown field "aprove"`},
		{"not a decision", "agent.approve.default.s4", "\x00\xff garbage", "decision payload is not valid UTF-8"},
		{"unknown call", "agent.approve.default.s5", `{"tool_call_id":"nope","approve":true}`, `no tool call "nope" waits for approval`},
		{"bad token", "agent.approve.default.s$1", `{"tool_call_id":"c1","approve":true}`, `session name "s$1" may hold only`},
		{"unknown agent", "agent.approve.ghost.s", `{"tool_call_id":"c1","approve":true}`, `unknown agent "ghost"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := f.nc.Publish(c.subject, []byte(c.payload)); err != nil {
				t.Fatal(err)
			}
			e := f.events.wait(t, "naming "+c.want, func(e agentfleet.Event) bool {
				return e.Type == agentfleet.EventError && strings.Contains(e.ErrorMessage, c.want)
			})
			if !strings.Contains(e.Subject+" "+e.ErrorMessage, strings.TrimPrefix(c.subject, "agent.approve.")) {
				t.Errorf("error event = %q on %q, want it to name %s", e.ErrorMessage, e.Subject, c.subject)
			}
		})
	}
	// A request whose reply subject is refused: nobody is answered, the
	// event says so, and the kept copy still reaches the owner.
	if err := f.nc.PublishRequest("agent.approve.default.s6", "not.an.inbox", []byte(`{"tool_call_id":"gone","approve":true}`)); err != nil {
		t.Fatal(err)
	}
	f.events.wait(t, "the refused reply", func(e agentfleet.Event) bool {
		return e.Type == agentfleet.EventError && strings.Contains(e.ErrorMessage, `reply subject "not.an.inbox" is not an inbox`) &&
			strings.Contains(e.ErrorMessage, "the decision itself goes to the session's owner through the approve stream, unanswered")
	})
	f.events.wait(t, "the kept copy refused by the owner", func(e agentfleet.Event) bool {
		return e.Type == agentfleet.EventError && strings.Contains(e.ErrorMessage, `no tool call "gone" waits for approval`)
	})
	js, _ := jetstream.New(f.nc)
	stream, err := js.Stream(context.Background(), "AGENT_INPUT")
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "no decision left in the input stream", func() bool {
		info, err := stream.Info(context.Background(), jetstream.WithSubjectFilter("agent.approve.>"))
		return err == nil && len(info.State.Subjects) == 0
	})
}
