package check

import (
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
)

// The classes of violations of delegation (a parent's call of an ask
// tool and the child sessions it runs), checked by VerifyDelegation.
const (
	// ClassAskResults: a parent's call of an ask tool has not exactly one
	// tool result in its session's history.
	ClassAskResults Class = "ask_results"
	// ClassDupChild: a child session has more than one ended run for one
	// parent call (agent, session, run and tool call id).
	ClassDupChild Class = "duplicated_child_run"
)

// VerifyDelegation checks the records of the parents' sessions (parents)
// and of the child agent's sessions (children) against the guarantees of
// delegation: each call of an ask tool has exactly one result, and each
// child session at most one ended run per parent call. It adds what it
// finds to f and counts the calls and child runs.
func (f *Findings) VerifyDelegation(parents, children []*Record) {
	calls := map[string]string{} // session/call id → where the call is
	results := map[string]int{}
	for _, r := range parents {
		switch m := r.Msg.(type) {
		case *agentfleet.AssistantMessage:
			for _, c := range m.ToolCalls() {
				if strings.HasPrefix(c.Name, "ask_") {
					calls[r.Session+"/"+c.ID] = fmt.Sprintf("%s run %s call %s (seq %d)", r.Session, Short(r.Run), c.ID, r.Seq)
				}
			}
		case *agentfleet.ToolResultMessage:
			if strings.HasPrefix(m.ToolName, "ask_") {
				results[r.Session+"/"+m.ToolCallID]++
			}
		}
	}
	for _, k := range sortedKeys(calls) {
		f.AskCalls++
		if n := results[k]; n != 1 {
			f.add(ClassAskResults, "%s: %d results", calls[k], n)
		}
	}
	parentOf := map[string]string{} // child session/run → parent call
	ended := map[string][]string{}  // child session + parent call → ended runs
	for _, r := range children {
		key := r.Session + "/" + r.Run
		if u, ok := r.Msg.(*agentfleet.UserMessage); ok && u.Parent != nil && parentOf[key] == "" {
			parentOf[key] = fmt.Sprintf("%s/%s/%s/%s", u.Parent.Agent, u.Parent.Session, Short(u.Parent.RunID), u.Parent.ToolCallID)
		}
		if r.End {
			f.ChildRuns++
			k := r.Session + " for " + parentOf[key]
			ended[k] = append(ended[k], Short(r.Run))
		}
	}
	for _, k := range sortedKeys(ended) {
		if runs := ended[k]; len(runs) > 1 {
			f.add(ClassDupChild, "%s: %d ended runs (%s)", k, len(runs), strings.Join(runs, ", "))
		}
	}
}

// expectedAsk is what a successful call of the ask tool gives in the run of
// msgid: the child's answer, whose results are not known here; "" for
// another tool.
func expectedAsk(tool, msgid string) string {
	if tool != model.ToolAsk {
		return ""
	}
	return "answer " + strings.TrimPrefix(model.ChildTask(msgid), "task ") + ": "
}
