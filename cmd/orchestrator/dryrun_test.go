package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/nats-io/nats.go"
)

// stackBomb is a definition whose execute overflowed the Go stack of the
// process that ran it (the library's json.decode recurses once per "["),
// which killed the orchestrator when write_tool's dry run ran there.
var stackBomb = map[string]any{
	"name": "bomb", "label": "Bomb", "description": "Decodes deep JSON.",
	"input_schema": map[string]any{"type": "object"},
	"code":         "def execute(args):\n    return str(json.decode('[' * 2000000 + ']' * 2000000))\n",
}

// TestDryRunRunsOnAScriptWorker writes the stack bomb with write_tool: the
// dry run runs on the script worker (a process of its own), which refuses
// the nesting; with no script worker, write_tool says so and runs nothing.
// The orchestrator answers throughout.
func TestDryRunRunsOnAScriptWorker(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	stopWorker := startScriptWorkerProcess(t, srv.ClientURL())

	model := llmtest.NewServer(t)
	t.Setenv("OPENAI_BASE_URL", model.BaseURL())
	t.Setenv("OPENAI_API_KEY", "k")
	bomb, _ := json.Marshal(stackBomb)
	writeBomb := func(id string) {
		model.Enqueue(
			llmtest.ToolCallsReply(llmtest.ToolCall{ID: id, Name: "write_tool", Arguments: string(bomb)}).Response(),
			llmtest.TextReply("done").Response(),
		)
	}
	writeBomb("w1")
	m := run(t, "--nats-url", srv.ClientURL())
	if got := agentfleet.JoinText(ask(t, nc, "agent.ask.default.bomb", "write the bomb").Content); got != "done" {
		t.Fatalf("answer = %q, want done", got)
	}
	if got, want := toolResult(t, model, "w1"), "json.decode: the JSON nests deeper than 64 levels"; !strings.Contains(got, want) {
		t.Errorf("write_tool result = %q, want it to say %q", got, want)
	}

	// Without a script worker, nothing runs the script.
	stopWorker()
	bustest.Eventually(t, "the server to drop the worker's dry-run subscription", func() bool {
		_, err := nc.Request("agent.scripts.dryrun", nil, time.Second)
		return errors.Is(err, nats.ErrNoResponders)
	})
	writeBomb("w2")
	if got := agentfleet.JoinText(ask(t, nc, "agent.ask.default.bomb2", "write the bomb again").Content); got != "done" {
		t.Fatalf("answer = %q, want done", got)
	}
	if got, want := toolResult(t, model, "w2"), "no script worker answered the dry run on agent.scripts.dryrun"; !strings.Contains(got, want) {
		t.Errorf("write_tool result = %q, want it to say %q", got, want)
	}
	if !m.Orchestrator().Ready() {
		t.Error("the orchestrator is not ready after the dry runs")
	}
}

// toolResult returns the text of the tool result id that the model was
// sent last.
func toolResult(t *testing.T, model *llmtest.Server, id string) string {
	t.Helper()
	reqs := model.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		for _, msg := range reqs[i].Messages {
			if msg.Role == "tool" && msg.ToolCallID == id {
				return msg.Text()
			}
		}
	}
	t.Fatalf("the model was never sent the result of %s", id)
	return ""
}
