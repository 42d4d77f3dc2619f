package input_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRelayStoreFailsAnswered relays asks, many at once, to a server that
// has no input stream: every store fails, and every ask is answered with an
// error that says it could not be stored, through the one watcher of the
// relayed stores.
func TestRelayStoreFailsAnswered(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(in *input.Inbound) error {
		t.Errorf("the handler got %s of %s, which was never stored", in.Kind, in.Session)
		return nil
	}), events.NewPublisher(nc, subjects, nil), nil)
	js, _ := jetstream.New(nc)
	in.Relayed(js)
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	defer in.Stop()
	const asks = 50
	var wg sync.WaitGroup
	errs := make(chan error, asks)
	for i := range asks {
		wg.Go(func() {
			reply, err := nc.Request(fmt.Sprintf("agent.ask.default.s%d", i), []byte("hello"), 10*time.Second)
			if err != nil {
				errs <- fmt.Errorf("ask %d: %w", i, err)
				return
			}
			var a agentfleet.AssistantMessage
			if err := json.Unmarshal(reply.Data, &a); err != nil {
				errs <- fmt.Errorf("ask %d: reply %s: %w", i, reply.Data, err)
				return
			}
			if a.StopReason != agentfleet.StopReasonError || !strings.Contains(a.ErrorMessage, "could not be stored") {
				errs <- fmt.Errorf("ask %d answered %s", i, reply.Data)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
