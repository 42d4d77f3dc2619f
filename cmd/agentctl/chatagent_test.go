package main

import (
	"context"
	"strings"
	"testing"
)

// TestChatChecksTheAgentFirst starts a chat with an agent the orchestrator
// does not have: it fails at once, naming the agent, before any message
// is typed, and prints no prompt.
func TestChatChecksTheAgentFirst(t *testing.T) {
	url := startFleet(t)
	p := newProg(t, url, strings.NewReader("hello\n"), "chat", "nosuch")
	err := p.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "agent nosuch") || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("err = %v, want one naming the unknown agent", err)
	}
	t.Logf("err = %v", err)
	if strings.Contains(p.stdout.String(), "> ") {
		t.Errorf("the chat started: %q", p.stdout.String())
	}
}
