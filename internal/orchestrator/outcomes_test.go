package orchestrator_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go/jetstream"
)

// TestResumedRunUsesTheRecordedOutcome stops an orchestrator while a call of
// a tool that is not idempotent runs; the worker finishes it after the
// orchestrator is gone. The orchestrator that resumes the run answers the
// call with the outcome the worker recorded (and says so on the call's
// events), instead of calling it unknown; the tool ran once. A worker that
// records nothing leaves the call of unknown outcome, as before.
func TestResumedRunUsesTheRecordedOutcome(t *testing.T) {
	for _, record := range []bool{true, false} {
		t.Run(map[bool]string{true: "recorded", false: "not recorded"}[record], func(t *testing.T) {
			srv := bustest.MustRunNATS(t)
			nc := bustest.MustConnect(t, srv)
			var outcomes *toolrpc.Outcomes
			if record {
				js, _ := jetstream.New(nc)
				var err error
				if outcomes, err = toolrpc.OpenOutcomes(context.Background(), js, toolrpc.OutcomeConfig{}); err != nil {
					t.Fatal(err)
				}
			}
			var runs atomic.Int32
			inCall, release := make(chan struct{}), make(chan struct{})
			charge := tool("charge", false, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
				if runs.Add(1) == 1 {
					close(inCall)
				}
				<-release // the worker goes on whatever the orchestrator does
				return agentfleet.TextResult("charged once"), nil
			})
			charge.Annotations.Idempotent = false
			w, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Tools: []*agentfleet.Tool{charge}, Heartbeat: 100 * time.Millisecond, Outcomes: outcomes})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Stop() })
			events := subscribeEvents(t, nc, "agent.events.>")
			out := outs(t, nc, "default", "pay")

			o1, err := orchestrator.New(bustest.MustConnect(t, srv), orchestrator.Config{Model: newScript().on("pay", use(`charge {}`)), Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			if err := o1.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			publish(t, nc, "agent.in.default.pay", "", `{"content":"pay","id":"u1"}`)
			<-inCall
			stopped, cancel := context.WithCancel(context.Background())
			cancel() // no grace: the run stays where it is, the call in flight
			if err := o1.Close(stopped); err != nil {
				t.Fatal(err)
			}
			close(release) // the worker finishes the call after its orchestrator left

			o2, err := orchestrator.New(bustest.MustConnect(t, srv), orchestrator.Config{Model: newScript().on("pay", sayResults()), Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			if err := o2.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer o2.Close(context.Background())
			final := next(t, out)
			got := agentfleet.JoinText(final.Content)
			if record {
				if want := "charge=charged once"; got != want {
					t.Errorf("final = %q, want %q", got, want)
				}
				recovered := events.list(func(e agentfleet.Event) bool {
					p, _ := e.Partial.(map[string]any)
					return e.Type == agentfleet.EventToolUpdate && p["recovered"] != nil
				})
				if len(recovered) != 1 || recovered[0].Worker != w.Name() {
					t.Errorf("recovered events %+v, want one naming worker %s", recovered, w.Name())
				}
			} else if !strings.Contains(got, "its outcome is unknown") {
				t.Errorf("final = %q, want the unknown outcome", got)
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the tool ran %d times, want once", n)
			}
		})
	}
}
