package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/nats-io/nats.go"
)

// toolEnds collects the tool.end events of one session.
func toolEnds(t *testing.T, nc *nats.Conn, subject string) chan agentfleet.Event {
	t.Helper()
	ends := make(chan agentfleet.Event, 16)
	sub, err := nc.Subscribe(subject, func(msg *nats.Msg) {
		var e agentfleet.Event
		if json.Unmarshal(msg.Data, &e) == nil {
			ends <- e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ends
}

// checkSelfToolRun checks the run of "make a tool that doubles numbers":
// write_tool and then double ended ok, double on the worker named worker,
// (the scripted tools' service of a script worker), and the answer holds
// the doubled example.
func checkSelfToolRun(t *testing.T, final *agentfleet.AssistantMessage, ends chan agentfleet.Event, worker string) {
	t.Helper()
	if got := agentfleet.JoinText(final.Content); !strings.Contains(got, "21 doubled is 42") || final.Model != "offline" {
		t.Errorf("answer = %q (%s, model %s, %s), want it to say 21 doubled is 42", got, final.StopReason, final.Model, final.ErrorMessage)
	}
	var tools []string
	for len(tools) < 2 {
		select {
		case e := <-ends:
			tools = append(tools, e.ToolName)
			if e.IsError {
				t.Errorf("%s failed: %+v", e.ToolName, e.Result)
			}
			if e.ToolName == "double" && !strings.HasPrefix(e.Worker, worker) {
				t.Errorf("double ran on %q, want a worker %s", e.Worker, worker)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("tool.end events %v, want write_tool and double", tools)
		}
	}
	if strings.Join(tools, ",") != "write_tool,double" {
		t.Errorf("tools run %v, want write_tool then double", tools)
	}
}

// TestOfflineSelfTooling is the README's write_tool example with no key:
// the offline model, in a real orchestrator, writes double with
// write_tool, the dry run and then the call run on a script worker
// process started before the tool existed, and the answer has the result.
func TestOfflineSelfTooling(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	srv := bustest.MustRunNATS(t)
	nc, err := bus.Connect(bus.ConnectConfig{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	startScriptWorkerProcess(t, srv.ClientURL())
	run(t, "--nats-url", srv.ClientURL())
	ends := toolEnds(t, nc, "agent.events.default.offline.tool.end")
	final := ask(t, nc, "agent.ask.default.offline", "make a tool that doubles numbers")
	// No worker runs in the orchestrator: double ran in the child.
	checkSelfToolRun(t, final, ends, "toolworker-scripts/")
}

// TestOfflineSelfToolingDefault is the same on the README's default
// command, go run ./cmd/orchestrator --workers 2: the embedded server has
// JetStream, so the in-process workers serve the scripted tools and run
// the dry run.
func TestOfflineSelfToolingDefault(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	m := run(t, "--workers", "2")
	nc := connect(t, m)
	ends := toolEnds(t, nc, "agent.events.default.demo.tool.end")
	final := ask(t, nc, "agent.ask.default.demo", "make a tool that doubles numbers")
	checkSelfToolRun(t, final, ends, "toolworker-scripts/")
}
