package check

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

// TestVerifyDelegation: a call of an ask tool with one result and a child
// session with one ended run for it pass; a call without a result, one
// with two, and a second ended run of a child session for the same call
// are each counted with the parent call named.
func TestVerifyDelegation(t *testing.T) {
	ask := func(session, run, id string) *Record {
		return &Record{Session: session, Run: run, Msg: &agentfleet.AssistantMessage{Content: []agentfleet.Content{
			{Type: agentfleet.ContentToolCall, ID: id, Name: "ask_helper", Arguments: json.RawMessage(`{"message":"task a.c"}`)}}}}
	}
	result := func(session, run, id string) *Record {
		return &Record{Session: session, Run: run, Msg: &agentfleet.ToolResultMessage{ToolCallID: id, ToolName: "ask_helper", Content: []agentfleet.Content{agentfleet.Text("answer a.c: a.c")}}}
	}
	child := func(session, run, call string) []*Record {
		p := &agentfleet.Parent{Agent: "default", Session: "s00", RunID: "r1", ToolCallID: call, Chain: []string{"default"}}
		return []*Record{
			{Session: session, Run: run, Msg: &agentfleet.UserMessage{ID: "m-" + call, Parent: p}},
			{Session: session, Run: run, End: true, Final: &agentfleet.AssistantMessage{StopReason: agentfleet.StopReasonStop}},
		}
	}
	good := []*Record{ask("s00", "r1", "c1"), result("s00", "r1", "c1")}
	for _, tc := range []struct {
		name     string
		parents  []*Record
		children []*Record
		class    Class
		want     string
	}{
		{"one result, one child run", good, child("d-1", "k1", "c1"), "", ""},
		{"a child run resumed keeps its run id", good, append(child("d-1", "k1", "c1"), child("d-1", "k1", "c1")[0]), "", ""},
		{"no result", good[:1], child("d-1", "k1", "c1"), ClassAskResults, "s00 run r1 call c1 (seq 0): 0 results"},
		{"two results", append(good, result("s00", "r1", "c1")), nil, ClassAskResults, "call c1 (seq 0): 2 results"},
		{"two child runs for one call", good, append(child("d-1", "k1", "c1"), child("d-1", "k2", "c1")...), ClassDupChild, "d-1 for default/s00/r1/c1: 2 ended runs (k1, k2)"},
		{"two calls, a run each", append(good, ask("s00", "r1", "c2"), result("s00", "r1", "c2")), append(child("d-1", "k1", "c1"), child("d-2", "k2", "c2")...), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFindings()
			f.VerifyDelegation(tc.parents, tc.children)
			if tc.class == "" {
				if f.Total() != 0 {
					t.Errorf("violations %+v, want none", f.Violations)
				}
				return
			}
			if f.Total() != 1 || f.Count(tc.class) != 1 {
				t.Fatalf("violations %+v, want one %s", f.Violations, tc.class)
			}
			for _, v := range f.Violations {
				if v.Class == tc.class && !strings.Contains(v.Examples[0], tc.want) {
					t.Errorf("example %q, want %q", v.Examples[0], tc.want)
				}
			}
		})
	}
}
