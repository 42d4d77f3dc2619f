package orchestrator

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/tools"
)

// TestHandoffsProfile: the agents a profile may hand over to are checked
// like those it may ask, and each becomes a transfer tool.
func TestHandoffsProfile(t *testing.T) {
	ps, err := ParseProfiles([]byte("agents:\n  - name: support\n    handoffs: [billing]\n  - name: billing\n    handoffs: [support]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ps[0].Handoffs, ","); got != "billing" {
		t.Errorf("support hands over to %q", got)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agents:\n  - name: support\n    handoffs: [billing]\n", `agent "support": handoffs entry 1: no agent "billing" is defined (the agents are support)`},
		{"agents:\n  - name: support\n    handoffs: [support]\n", `agent "support": handoffs entry 1 names the agent itself: an agent may not hand over to itself`},
		{"agents:\n  - name: support\n    handoffs: [b, b]\n  - name: b\n", `agent "support": handoffs entry 2: agent "b" is listed twice`},
		{"agents:\n  - name: support\n    handoffs: b\n", `cannot unmarshal`},
		{"agents:\n  - name: support\n    handoff: [b]\n  - name: b\n", `field handoff not found`},
	} {
		if _, err := ParseProfiles([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseProfiles(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
	a := &agent{profile: ps[0]}
	a.store = tools.NewStore(a.profile.Name)
	if err := a.registerTransfers(); err != nil {
		t.Fatal(err)
	}
	if a.transfers["transfer_to_billing"] != "billing" {
		t.Errorf("transfers = %v", a.transfers)
	}
	if _, ok := a.store.Get("transfer_to_billing"); !ok {
		t.Error("no tool transfer_to_billing in support's store")
	}
}
