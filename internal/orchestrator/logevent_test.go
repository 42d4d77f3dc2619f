package orchestrator

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

// TestRetryLogged: a tool.update announcing a retry (as the tool client
// sends one after a lost worker) is one info line naming the tool, the
// worker and the attempt; other updates stay at debug.
func TestRetryLogged(t *testing.T) {
	var b strings.Builder
	o := &Sink{log: slog.New(slog.NewTextHandler(&b, nil))}
	o.logEvent(&agentfleet.Event{Type: agentfleet.EventToolUpdate, Agent: "default", Session: "s", ToolCallID: "c1", ToolName: "sleep",
		Partial: map[string]any{"retry": map[string]any{"attempt": 2, "reason": "worker victim/1 sent nothing", "worker": "victim/1"}}})
	o.logEvent(&agentfleet.Event{Type: agentfleet.EventToolUpdate, Agent: "default", Session: "s", ToolCallID: "c1", ToolName: "sleep",
		Partial: map[string]any{"slept_ms": 100}})
	got := b.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, `level=INFO msg="retrying tool call"`) ||
		!strings.Contains(got, "tool=sleep worker=victim/1 attempt=2") {
		t.Errorf("log:\n%s", got)
	}
}
