package input_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestApproveStreamKeepsDecisions publishes decisions while nothing
// consumes the input (no orchestrator is up): plain publishes are kept in
// the approve stream and reach the input stream under their session's
// partition, as bus.Partition computes it; a request gets no answer from the
// streams (no_ack: the owner answers it); and what the bounds refuse is
// not stored: an oversized payload, a subject with a token too many, more
// than ApproveMaxPerSession decisions of one session.
func TestApproveStreamKeepsDecisions(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	ctx := context.Background()
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(*input.Inbound) error { return nil }), nil, nil)
	if _, err := d.Input(ctx, in); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	input1, _ := js.Stream(ctx, "AGENT_INPUT")
	approve, _ := js.Stream(ctx, "AGENT_APPROVE")

	want := map[string]int{}
	for i := range 20 {
		agent, session := fmt.Sprintf("agent%d", i%2), fmt.Sprintf("s-%d", i)
		if err := nc.Publish(subjects.Approve(agent, session), []byte(`{"tool_call_id":"c","approve":true}`)); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("agent.approve.%d.%s.%s", bus.Partition(agent, session), agent, session)]++
	}
	_, err = nc.Request(subjects.Approve("agent0", "asked"), []byte(`{"tool_call_id":"c","approve":false}`), 300*time.Millisecond)
	if !errors.Is(err, nats.ErrTimeout) {
		t.Errorf("request with no orchestrator: %v, want no answer (a timeout), not the stream's acknowledgement", err)
	}
	want[fmt.Sprintf("agent.approve.%d.agent0.asked", bus.Partition("agent0", "asked"))]++
	// Refused by the bounds.
	nc.Publish(subjects.Approve("agent0", "big"), []byte(`{"reason":"`+strings.Repeat("x", input.ApproveMaxMsgSize)+`"}`))
	nc.Publish("agent.approve.agent0.s-1.extra", []byte(`{"tool_call_id":"c","approve":true}`))
	for range input.ApproveMaxPerSession + 5 {
		nc.Publish(subjects.Approve("agent1", "flood"), []byte(`garbage`))
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The flood is bounded in the approve stream; the input stream takes
	// what it finds there (its owner terminates garbage).
	flood := fmt.Sprintf("agent.approve.%d.agent1.flood", bus.Partition("agent1", "flood"))
	var stored map[string]uint64
	bustest.Eventually(t, "every decision in the input stream", func() bool {
		info, err := input1.Info(ctx, jetstream.WithSubjectFilter(">"))
		if err != nil {
			return false
		}
		stored = info.State.Subjects
		for subject, n := range want {
			if stored[subject] != uint64(n) {
				return false
			}
		}
		return stored[flood] > 0
	})
	for subject := range stored {
		if _, _, _, err := subjects.ParseStored(subject); err != nil {
			t.Errorf("stored subject: %v", err)
		}
		if want[subject] == 0 && subject != flood {
			t.Errorf("stored under %s, which was refused or never sent", subject)
		}
	}
	ainfo, err := approve.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ainfo.State.Subjects[subjects.Approve("agent1", "flood")]; got != input.ApproveMaxPerSession {
		t.Errorf("approve stream keeps %d decisions of one session, want at most %d", got, input.ApproveMaxPerSession)
	}
	if c := ainfo.Config; !c.NoAck || c.MaxAge != input.ApproveMaxAge || c.Discard != jetstream.DiscardOld {
		t.Errorf("approve stream config: no_ack %v, max age %v, discard %v", c.NoAck, c.MaxAge, c.Discard)
	}
}

// TestApproveSourceAddedToEarlierStream starts on an input stream of an
// earlier release, which sources nothing: opening the durable input adds
// the approve stream as its source, and a decision published then reaches
// the input stream.
func TestApproveSourceAddedToEarlierStream(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	src, dest := subjects.InputTransform()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "AGENT_INPUT", Description: "agentfleet input (in, steer, relayed ask and abort), by session partition",
		Subjects:         []string{"agent.in.*.*", "agent.steer.*.*", "agent.relay.*.*"},
		SubjectTransform: &jetstream.SubjectTransformConfig{Source: src, Destination: dest},
		Retention:        jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute, AllowDirect: true,
	}); err != nil {
		t.Fatal(err)
	}
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(*input.Inbound) error { return nil }), nil, nil)
	if _, err := d.Input(ctx, in); err != nil {
		t.Fatal(err)
	}
	stream, _ := js.Stream(ctx, "AGENT_INPUT")
	if got := stream.CachedInfo().Config.Sources; len(got) != 1 || got[0].Name != "AGENT_APPROVE" {
		t.Fatalf("input stream sources = %v, want AGENT_APPROVE", got)
	}
	if err := nc.Publish(subjects.Approve("default", "s"), []byte(`{"tool_call_id":"c","approve":true}`)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("agent.approve.%d.default.s", bus.Partition("default", "s"))
	bustest.Eventually(t, "the decision in the input stream", func() bool {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(want))
		return err == nil && info.State.Subjects[want] == 1
	})
}
