package bus

import (
	"strings"
	"testing"
)

func TestSubjects(t *testing.T) {
	s, err := NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Event("default", "demo", "tool.end"), "agent.events.default.demo.tool.end"; got != want {
		t.Errorf("event subject = %s, want %s", got, want)
	}
	kind, agent, session, err := s.ParseClient("agent.ask.default.demo-1_x")
	if err != nil || kind != KindAsk || agent != "default" || session != "demo-1_x" {
		t.Errorf("ParseClient = %s %s %s %v", kind, agent, session, err)
	}
	for subject, want := range map[string]string{
		"agent.in.default":         "want agent.<kind>.<agent>.<session>",
		"agent.in.de fault.x":      `agent name "de fault"`,
		"agent.in.default.a@b":     `session name "a@b" may hold only`,
		"other.in.default.s":       `is not under prefix "agent"`,
		"agent.in.default.s.extra": "want agent.<kind>.<agent>.<session>",
	} {
		if _, _, _, err := s.ParseClient(subject); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseClient(%q) = %v, want %q", subject, err, want)
		}
	}
	if _, err := NewSubjects("acme.agent"); err != nil {
		t.Errorf("two-token prefix: %v", err)
	}
	if _, err := NewSubjects("agent.*"); err == nil {
		t.Error("wildcard prefix accepted")
	}
}

func TestIsCancel(t *testing.T) {
	s, _ := NewSubjects("acme.agent")
	for subject, want := range map[string]bool{
		"acme.agent.worker.Q94026aeuu1iC6cuHQEzSf.cancel": true,
		"acme.agent.worker.a-b_c.cancel":                  true,
		"acme.agent.worker..cancel":                       false,
		"acme.agent.worker.a.b.cancel":                    false,
		"acme.agent.worker.*.cancel":                      false,
		"agent.worker.x.cancel":                           false,
		"acme.agent.tool.echo":                            false,
		"$SYS.REQ.SERVER.PING":                            false,
		"":                                                false,
	} {
		if got := s.IsCancel(subject); got != want {
			t.Errorf("IsCancel(%q) = %v, want %v", subject, got, want)
		}
	}
}
