package mcpbridge

import (
	"maps"
	"slices"

	"github.com/agentfleet/agentfleet"
)

// DefsForTest returns the definitions served now, sorted by name.
func DefsForTest(b *Bridge) []agentfleet.ToolDef {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []agentfleet.ToolDef
	for _, n := range slices.Sorted(maps.Keys(b.defs)) {
		out = append(out, b.defs[n])
	}
	return out
}
