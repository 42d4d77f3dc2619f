package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// TestFleetStatusReportsCallsInFlight holds a call in a worker and checks
// what FleetStatus says of the worker: its tools, concurrency, the call in
// flight (from its $SRV.STATS data) and the requests counted; a service of
// another prefix is not listed.
func TestFleetStatusReportsCallsInFlight(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	started, release := make(chan struct{}), make(chan struct{})
	block := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "block", Description: "waits for the test"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			close(started)
			<-release
			return agentfleet.TextResult("done"), nil
		}),
	}
	s, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Name: "blocker", Concurrency: 3, Tools: []*agentfleet.Tool{block}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	other, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Name: "other", Prefix: "elsewhere", Tools: []*agentfleet.Tool{block}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Stop() })

	cc := bustest.MustConnect(t, srv)
	req, err := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "held", Tool: "block", Args: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.PublishRequest("agent.tool.block", cc.NewRespInbox(), req); err != nil {
		t.Fatal(err)
	}
	<-started
	defer close(release)

	subjects, _ := bus.NewSubjects("")
	ws, err := fleet.FleetStatus(context.Background(), cc, subjects, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 {
		t.Fatalf("FleetStatus listed %d workers, want the one of prefix agent: %+v", len(ws), ws)
	}
	w := ws[0]
	if w.Name != "blocker" || w.Concurrency != 3 || w.InFlight != 1 || w.Requests != 1 {
		t.Errorf("worker = %+v, want blocker, concurrency 3, 1 in flight, 1 request", w)
	}
	if len(w.Tools) != 1 || w.Tools[0].Name != "block" || w.Tools[0].Requests != 1 {
		t.Errorf("tools = %+v, want block with 1 request", w.Tools)
	}
}
