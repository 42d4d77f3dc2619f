package chaos

import (
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// TestUnknownOutcomesCounted: the report counts the tool results that say
// a call's outcome is unknown, and nothing else.
func TestUnknownOutcomesCounted(t *testing.T) {
	result := func(text string, isError bool) *check.Record {
		return &check.Record{Msg: &agentfleet.ToolResultMessage{Role: agentfleet.RoleTool, IsError: isError, Content: []agentfleet.Content{agentfleet.Text(text)}}}
	}
	recs := []*check.Record{
		result(fmt.Sprintf(loop.UnknownOutcomeText, "ledger"), true),
		result("Tool ledger: worker lost; the call's outcome is unknown and it was not retried, because tool ledger is not marked idempotent or read_only", true),
		result("ledger a1", false),
		result("outcome is unknown", false), // a result that happens to say so
		result("Tool ledger: boom", true),
		{End: true},
	}
	if got := unknownOutcomes(recs); got != 2 {
		t.Errorf("unknownOutcomes = %d, want 2", got)
	}
}
