package orchestrator

import (
	"strings"

	"github.com/agentfleet/agentfleet"
)

// mustFlush decides whether the history record of m, appended by a run,
// must be stored before the run goes on, or may wait in the session's
// history writer for the next record that must (docs/DESIGN.md, "Fewer
// durable writes"). rerunnable says whether a tool's calls may run again
// after a crash: its annotations say ReadOnly or Idempotent.
//
// A record may wait only when a crash that loses it loses nothing the
// redelivered input does not make again: the user message (its input is
// acknowledged only after the run's end is stored), an assistant message
// that is the final answer (stored with the run end) or whose calls all
// run again safely, and the result of such a call. An assistant message
// with a call of any other tool is stored before the call goes out, and
// the result of such a call as soon as it is known, for neither can be
// made again. Approval requests, decisions, summaries and run ends are
// always stored at once (the Writer's Append methods). So is the user
// message of an A2A task (client message id a2a-…, package a2aserver):
// its task is read from the stored history by whichever orchestrator is
// asked, and must be found there while its run works.
func mustFlush(m agentfleet.Message, rerunnable func(tool string) bool) bool {
	switch m := m.(type) {
	case *agentfleet.UserMessage:
		return strings.HasPrefix(m.ID, "a2a-")
	case *agentfleet.AssistantMessage:
		if m.StopReason == agentfleet.StopReasonLength {
			return false // its calls are refused, never run
		}
		for _, c := range m.ToolCalls() {
			if !rerunnable(c.Name) {
				return true
			}
		}
		return false
	case *agentfleet.ToolResultMessage:
		return !rerunnable(m.ToolName)
	}
	return true
}

// rerunnable reports whether the calls of the agent's tool name may run
// again after a crash (the tool's own annotations, as its worker declares
// them); an unknown tool may not.
func (s *session) rerunnable(name string) bool {
	t, ok := s.agent.store.Get(name)
	return ok && (t.Annotations.ReadOnly || t.Annotations.Idempotent)
}
