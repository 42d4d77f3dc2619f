package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/metrics"
)

// An orchestrator's metrics, served on /metrics. The command passes m as
// orchestrator.Config.Observer and listens on its --http address.
func ExampleListen() {
	m := metrics.NewOrchestrator()
	srv, err := metrics.Listen("127.0.0.1:0", "http", m.Registry(), func() error { return nil })
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown(context.Background())

	m.Event(&agentfleet.Event{Type: agentfleet.EventRunStart, Agent: "default", Session: "s1"})
	m.Event(&agentfleet.Event{Type: agentfleet.EventRunEnd, Agent: "default", Session: "s1", StopReason: agentfleet.StopReasonStop})

	resp, err := http.Get("http://" + srv.Addr() + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "agentfleet_runs_") {
			fmt.Println(line)
		}
	}
	// Output:
	// agentfleet_runs_active 0
	// agentfleet_runs_ended_total{stop_reason="aborted"} 0
	// agentfleet_runs_ended_total{stop_reason="budget"} 0
	// agentfleet_runs_ended_total{stop_reason="error"} 0
	// agentfleet_runs_ended_total{stop_reason="length"} 0
	// agentfleet_runs_ended_total{stop_reason="max_turns"} 0
	// agentfleet_runs_ended_total{stop_reason="stop"} 1
	// agentfleet_runs_ended_total{stop_reason="tool_use_terminated"} 0
	// agentfleet_runs_started_total 1
}
