// Package rundiff compares two runs of stored session histories, a run and
// its replay in a fork: it picks one run's records out of a history and
// turns them into steps (the user message, each assistant message with its
// tool calls, each tool result, the end) with their model, tokens and
// cost (run.go), and aligns the steps of two runs side by side (diff.go).
//
// Its concern is that comparison, as pure functions: it does no I/O and
// imports only the agentfleet root types.
package rundiff

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet"
)

// Record is one stored record of a session as the history subject lists
// it (client.HistoryRecordJSON): its run, its kind (user, assistant, tool,
// end, approval, decision, summary, handoff, forked) and its body as
// JSON, absent when Omitted (too large to list; Size its bytes).
type Record struct {
	RunID   string
	Kind    string
	Body    json.RawMessage
	Omitted bool
	Size    int
}

// MaxResultRunes bounds the text of a tool result in a Step.
const MaxResultRunes = 200

// Call is a tool call of an assistant message: the tool and its
// arguments as the model wrote them.
type Call struct {
	Name string `json:"name"`
	Args string `json:"args"`
}

// Step is one record of a run: a message, the end, or another record of
// the run (approval, decision, summary, handoff), which has its kind only.
type Step struct {
	Kind string `json:"kind"`
	// Text is a message's text; a tool result's at most MaxResultRunes.
	Text  string `json:"text,omitempty"`
	Calls []Call `json:"calls,omitempty"`
	// Tool names the tool of a result; Error says it is an error.
	Tool  string `json:"tool,omitempty"`
	Error bool   `json:"error,omitempty"`
	// Model and Usage are those of an assistant message.
	Model string            `json:"model,omitempty"`
	Usage *agentfleet.Usage `json:"usage,omitempty"`
}

// Run is one run of a session, from its stored records.
type Run struct {
	Session string `json:"session"`
	RunID   string `json:"run_id"`
	// User is the text of its first user message.
	User string `json:"user"`
	// Steps are its records after that first user message, the end left
	// out.
	Steps []Step `json:"steps"`
	// Ended says the run has an end record; Answer, StopReason and Usage
	// are those of its final message (Usage the run's total), else of its
	// last assistant message and the sum of their usages.
	Ended      bool              `json:"ended"`
	Answer     string            `json:"answer"`
	StopReason string            `json:"stop_reason,omitempty"`
	Model      string            `json:"model,omitempty"`
	Usage      *agentfleet.Usage `json:"usage,omitempty"`
}

// Cost is what the run's model calls cost, in US dollars, as the
// orchestrator priced them (its endpoints' prices; 0 when none is known).
func (r *Run) Cost() float64 { return agentfleet.CostOf(r.Usage) }

// Extract returns run runID of the records of session, in order. It fails
// when the session holds no record of the run.
func Extract(session string, recs []Record, runID string) (Run, error) {
	run := Run{Session: session, RunID: runID, Steps: []Step{}}
	found, user := false, false
	for _, r := range recs {
		if r.RunID != runID {
			continue
		}
		found = true
		if r.Omitted {
			run.Steps = append(run.Steps, Step{Kind: r.Kind, Text: fmt.Sprintf("(omitted, %d bytes)", r.Size)})
			continue
		}
		switch r.Kind {
		case "user":
			var u agentfleet.UserMessage
			if err := json.Unmarshal(r.Body, &u); err != nil {
				return run, fmt.Errorf("run %s: a user message: %w", runID, err)
			}
			if !user {
				run.User, user = agentfleet.JoinText(u.Content), true
				continue
			}
			run.Steps = append(run.Steps, Step{Kind: r.Kind, Text: agentfleet.JoinText(u.Content)})
		case "assistant":
			var a agentfleet.AssistantMessage
			if err := json.Unmarshal(r.Body, &a); err != nil {
				return run, fmt.Errorf("run %s: an assistant message: %w", runID, err)
			}
			s := Step{Kind: r.Kind, Text: agentfleet.JoinText(a.Content), Model: a.Model, Usage: a.Usage}
			for _, c := range agentfleet.ToolCallBlocks(a.Content) {
				s.Calls = append(s.Calls, Call{Name: c.Name, Args: string(c.Arguments)})
			}
			run.Steps = append(run.Steps, s)
			if !run.Ended {
				run.Answer, run.StopReason, run.Model = s.Text, string(a.StopReason), a.Model
				run.Usage = run.Usage.Add(a.Usage)
			}
		case "tool":
			var t agentfleet.ToolResultMessage
			if err := json.Unmarshal(r.Body, &t); err != nil {
				return run, fmt.Errorf("run %s: a tool result: %w", runID, err)
			}
			run.Steps = append(run.Steps, Step{Kind: r.Kind, Tool: t.ToolName, Error: t.IsError, Text: Shorten(agentfleet.JoinText(t.Content), MaxResultRunes)})
		case "end":
			var f agentfleet.AssistantMessage
			if err := json.Unmarshal(r.Body, &f); err != nil {
				return run, fmt.Errorf("run %s: its end: %w", runID, err)
			}
			run.Ended, run.Answer, run.StopReason, run.Usage = true, agentfleet.JoinText(f.Content), string(f.StopReason), f.Usage
			if f.Model != "" {
				run.Model = f.Model
			}
		default:
			run.Steps = append(run.Steps, Step{Kind: r.Kind})
		}
	}
	if !found {
		return run, fmt.Errorf("session %s has no run %q", session, runID)
	}
	return run, nil
}

// AfterFork returns the first run stored after the last forked record of
// recs: in a replay's session, the replayed run. It fails when recs hold
// no forked record, or no run after it.
func AfterFork(recs []Record) (string, error) {
	last := -1
	for i, r := range recs {
		if r.Kind == "forked" {
			last = i
		}
	}
	if last < 0 {
		return "", fmt.Errorf("the session holds no forked record: give the run to compare")
	}
	for _, r := range recs[last+1:] {
		if r.RunID != "" && r.RunID != recs[last].RunID && r.Kind != "retained" { // not a cut's record
			return r.RunID, nil
		}
	}
	return "", fmt.Errorf("the session holds no run after its forked record")
}

// Shorten returns s on one line, at most n runes of it, "…" at the end
// when cut.
func Shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:max(n-1, 0)]) + "…"
	}
	return s
}
