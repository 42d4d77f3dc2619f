package erase

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus"
)

func TestParse(t *testing.T) {
	s, _ := bus.NewSubjects("")
	acme, _ := bus.NewSubjects("acme.agent")
	long := strings.Repeat("x", 129)
	for _, tc := range []struct {
		name, subject  string
		subjects       bus.Subjects
		agent, session string
		err            string
		stop           bool
	}{
		{"delete", "agent.delete.default.s1", s, "default", "s1", "", false},
		{"prefix of two tokens", "acme.agent.delete.a-1.s_2", acme, "a-1", "s_2", "", false},
		{"stop", "agent.erase.default.s1", s, "default", "s1", "", true},
		{"other prefix", "other.delete.default.s1", s, "", "", "want agent.delete.<agent>.<session>", false},
		{"no session", "agent.delete.default", s, "", "", "want agent.delete", false},
		{"too many tokens", "agent.delete.default.s1.x", s, "", "", "may hold only", false},
		{"empty agent", "agent.delete..s1", s, "", "", "agent name is empty", false},
		{"long session", "agent.delete.default." + long, s, "", "", "limit is 128", false},
		{"stop is not delete", "agent.erase.default.s1", s, "", "", "want agent.delete", false},
		{"delete is not stop", "agent.delete.default.s1", s, "", "", "want agent.erase", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse := Parse
			if tc.stop {
				parse = ParseStop
			}
			agent, session, err := parse(tc.subjects, tc.subject)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || agent != tc.agent || session != tc.session {
				t.Fatalf("got %q %q %v, want %q %q", agent, session, err, tc.agent, tc.session)
			}
		})
	}
	if got := Subject(s, "a", "b"); got != "agent.delete.a.b" {
		t.Errorf("Subject = %q", got)
	}
	if got := StopSubject(acme, "a", "b"); got != "acme.agent.erase.a.b" {
		t.Errorf("StopSubject = %q", got)
	}
}

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		name, data, err string
	}{
		{"confirmed", `{"confirm":"s1"}`, ""},
		{"spaces", " {\"confirm\" : \"s1\"}\n", ""},
		{"empty object", `{}`, `confirm is "", want the session's name, "s1"`},
		{"other session", `{"confirm":"s2"}`, `confirm is "s2"`},
		{"empty body", ``, "not JSON"},
		{"bad json", `{"confirm":`, "not JSON"},
		{"unknown field", `{"confirm":"s1","all":true}`, "unknown field"},
		{"not an object", `["s1"]`, "not JSON"},
		{"two values", `{"confirm":"s1"}{"confirm":"s1"}`, "more than one"},
		{"confirm not a string", `{"confirm":1}`, "not JSON"},
		{"oversized", `{"confirm":"` + strings.Repeat("x", 2000) + `"}`, "limit is 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRequest("s1", []byte(tc.data))
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

func TestUnanswered(t *testing.T) {
	for _, tc := range []struct {
		name     string
		members  []string
		answered []string
		want     []string
	}{
		{"none known", nil, []string{"o1"}, nil},
		{"all answered", []string{"o2", "o1"}, []string{"o1", "o2"}, nil},
		{"one dead", []string{"o2", "o1", "o3"}, []string{"o1"}, []string{"o2", "o3"}},
		{"an answer from a non-member", []string{"o1"}, []string{"o9"}, []string{"o1"}},
		{"a member twice", []string{"o1", "o1"}, nil, []string{"o1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := map[string]bool{}
			for _, id := range tc.answered {
				a[id] = true
			}
			if got := Unanswered(tc.members, a); !slices.Equal(got, tc.want) {
				t.Fatalf("Unanswered = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	s, _ := bus.NewSubjects("")
	got := Targets(s, "default", "s1")
	p := bus.Partition("default", "s1")
	want := []Target{
		{"AGENT_HISTORY", "agent.history.default.s1"},
		{"AGENT_APPROVE", "agent.approve.default.s1"},
		{"AGENT_INPUT", "agent.*." + strconv.Itoa(p) + ".default.s1"},
		{"AGENT_EVENTS", "agent.events.default.s1.>"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Targets = %+v, want %+v", got, want)
	}
}
