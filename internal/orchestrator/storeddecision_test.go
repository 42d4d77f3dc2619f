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
// input stream.
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
