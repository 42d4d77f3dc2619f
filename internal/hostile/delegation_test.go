package hostile_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAgentAsToolOnTheShippedConfiguration: with the shipped users and
// permissions, an agent's ask tool reaches the other agent (the
// orchestrator user may ask and abort sessions as a client does) and its
// answer comes back on the orchestrator's own inbox.
func TestAgentAsToolOnTheShippedConfiguration(t *testing.T) {
	config := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(config, []byte("agents:\n  - name: default\n    agents: [helper]\n  - name: helper\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := startFleet(t, "--http", "", "--config", config)
	nc := f.connect(t, "client")
	if got, want := ask(t, nc, "delegating", `call ask_helper {"message":"hi"}`), "result: echo: hi"; got != want {
		t.Errorf("the answer is %q, want %q", got, want)
	}
}
