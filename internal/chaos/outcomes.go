package chaos

import (
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
)

// unknownOutcomes counts the stored tool results that say a call's outcome
// is unknown: calls in flight when their orchestrator stopped whose worker
// recorded no outcome the new owner could use.
func unknownOutcomes(recs []*check.Record) int {
	n := 0
	for _, rec := range recs {
		tr, ok := rec.Msg.(*agentfleet.ToolResultMessage)
		if !ok || !tr.IsError {
			continue
		}
		for _, c := range tr.Content {
			if c.Type == agentfleet.ContentText && (strings.Contains(c.Text, "outcome is unknown") || strings.Contains(c.Text, "what it returned is unknown")) {
				n++
				break
			}
		}
	}
	return n
}
