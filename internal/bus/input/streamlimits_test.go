package input_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/nats-io/nats.go/jetstream"
)

// TestStreamLimits opens the input and history streams with the
// defaults, then again with limits, as an orchestrator restarted with
// --input-max-age, --input-max-bytes, --history-max-age and
// --history-max-bytes would: the streams that exist are updated to them
// (read back from the server's stream info), and an input stream that is
// full refuses new input rather than dropping what it holds.
func TestStreamLimits(t *testing.T) {
	ctx := context.Background()
	nc := bustest.MustConnect(t, bustest.MustRunNATS(t))
	subjects, _ := bus.NewSubjects("")
	handler := input.NewInput(nc, subjects, input.InputHandlerFunc(func(*input.Inbound) error { return nil }), events.NewPublisher(nc, subjects, nil), nil)
	open := func(cfg input.DurableConfig) (in, hist jetstream.StreamConfig) {
		t.Helper()
		d, err := input.OpenDurable(ctx, nc, subjects, cfg)
		if err != nil {
			t.Fatal(err)
		}
		di, err := d.Input(ctx, handler)
		if err != nil {
			t.Fatal(err)
		}
		di.Stop()
		dc := d.Config()
		if _, err := history.Open(ctx, d.JetStream(), subjects, "w", history.Config{MaxAge: dc.HistoryMaxAge, MaxBytes: dc.HistoryMaxBytes}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			to   *jetstream.StreamConfig
		}{{"AGENT_INPUT", &in}, {"AGENT_HISTORY", &hist}} {
			s, err := d.JetStream().Stream(ctx, c.name)
			if err != nil {
				t.Fatal(err)
			}
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			*c.to = info.Config
		}
		return in, hist
	}

	i, h := open(input.DurableConfig{})
	if i.MaxAge != input.DefaultInputMaxAge || i.MaxBytes != -1 || i.Discard != jetstream.DiscardNew {
		t.Errorf("input by default: max age %s, max bytes %d, discard %v; want %s, none, new", i.MaxAge, i.MaxBytes, i.Discard, input.DefaultInputMaxAge)
	}
	if h.MaxAge != 0 || h.MaxBytes != -1 {
		t.Errorf("history by default: max age %s, max bytes %d; want none", h.MaxAge, h.MaxBytes)
	}

	i, h = open(input.DurableConfig{InputMaxAge: time.Hour, InputMaxBytes: 4096, HistoryMaxAge: 48 * time.Hour, HistoryMaxBytes: 1 << 30})
	if i.MaxAge != time.Hour || i.MaxBytes != 4096 {
		t.Errorf("input updated: max age %s, max bytes %d; want 1h, 4096", i.MaxAge, i.MaxBytes)
	}
	if h.MaxAge != 48*time.Hour || h.MaxBytes != 1<<30 {
		t.Errorf("history updated: max age %s, max bytes %d; want 48h, 1 GiB", h.MaxAge, h.MaxBytes)
	}

	// Nothing consumes this partition: the input stays, and fills the
	// stream's 4 KiB.
	js, _ := jetstream.New(nc)
	var refused error
	for n := 0; n < 64 && refused == nil; n++ {
		_, refused = js.Publish(ctx, "agent.in.default.full", []byte(strings.Repeat("x", 512)))
	}
	if refused == nil || !strings.Contains(refused.Error(), "maximum bytes") {
		t.Fatalf("a full input stream: %v, want a refusal", refused)
	}
	s, _ := js.Stream(ctx, "AGENT_INPUT")
	info, _ := s.Info(ctx)
	if info.State.Msgs == 0 || info.State.FirstSeq != 1 {
		t.Errorf("the full stream holds %d messages from %d: the first ones must stay", info.State.Msgs, info.State.FirstSeq)
	}

	i, h = open(input.DurableConfig{InputMaxAge: -1})
	if i.MaxAge != 0 || i.MaxBytes != -1 || h.MaxAge != 0 || h.MaxBytes != -1 {
		t.Errorf("bounds lifted: input max age %s, max bytes %d; history %s, %d; want none", i.MaxAge, i.MaxBytes, h.MaxAge, h.MaxBytes)
	}
}
