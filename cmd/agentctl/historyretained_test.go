package main

import (
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/client"
)

// TestHistoryRetainedText shows a retained record (a cut by the agent's
// history bounds) as what it dropped.
func TestHistoryRetainedText(t *testing.T) {
	r := &client.HistoryRecordJSON{Kind: "retained", Body: []byte(`{"first_seq":42,"runs":3,"records":9,"bytes":900}`)}
	if got, want := recordText(r), "3 oldest runs dropped: the history begins at 42"; got != want {
		t.Errorf("recordText = %q, want %q", got, want)
	}
}
