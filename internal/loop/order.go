package loop

import "github.com/agentfleet/agentfleet"

// orderResults puts the tool results that follow each assistant message in the
// order of its tool calls: they are stored as each call ends, and the model
// sees them in call order, as in the process that ran them. It sorts in
// place and returns entries.
func orderResults(entries []Entry) []Entry {
	for i := 0; i < len(entries); i++ {
		a, ok := entries[i].Message.(*agentfleet.AssistantMessage)
		if !ok {
			continue
		}
		order := map[string]int{}
		for k, c := range ExtractToolCalls(&agentfleet.AssistantMessage{Content: append([]agentfleet.Content(nil), a.Content...)}) {
			order[c.ID] = k
		}
		j := i + 1
		for j < len(entries) {
			if _, ok := entries[j].Message.(*agentfleet.ToolResultMessage); !ok || entries[j].RunID != entries[i].RunID {
				break
			}
			j++
		}
		block := entries[i+1 : j]
		rank := func(e Entry) int {
			if k, ok := order[e.Message.(*agentfleet.ToolResultMessage).ToolCallID]; ok {
				return k
			}
			return len(order)
		}
		// Insertion sort: blocks are short and mostly in order already.
		for x := 1; x < len(block); x++ {
			for y := x; y > 0 && rank(block[y]) < rank(block[y-1]); y-- {
				block[y], block[y-1] = block[y-1], block[y]
			}
		}
		i = j - 1
	}
	return entries
}

// orderResultsOf puts the results of the session's tool calls in call order
// (after a resumed run settled the calls it found without results).
func (s *Session) orderResultsOf() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unpackLocked()
	entries := make([]Entry, len(s.history))
	for i, m := range s.history {
		entries[i] = Entry{RunID: s.runOf[i], Message: m}
	}
	orderResults(entries)
	// New slices: views handed out of the old ones must not change.
	history, runOf := make([]agentfleet.Message, len(entries)), make([]string, len(entries))
	for i, e := range entries {
		history[i], runOf[i] = e.Message, e.RunID
	}
	s.history, s.runOf = history, runOf
}
