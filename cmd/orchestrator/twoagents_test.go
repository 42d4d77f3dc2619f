package main

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

// TestTwoAgentExample is the README's two-agent example on the offline
// model: lead, in deploy/agents.yaml, asks math and web as tools in one
// batch and answers with what they said.
func TestTwoAgentExample(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	m := run(t, "--workers", "1", "--config", "../../deploy/agents.yaml")
	nc := connect(t, m)
	final := ask(t, nc, "agent.ask.lead.demo", "ask math: 6*7 and ask web: time in Tokyo")
	got := agentfleet.JoinText(final.Content)
	if final.StopReason != agentfleet.StopReasonStop || !strings.HasPrefix(got, "ask_math: calculator: 42; ask_web: get_time: ") {
		t.Errorf("lead answered %s %q", final.StopReason, got)
	}
}
