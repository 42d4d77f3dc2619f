package history

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestAcks publishes through a store's acknowledgement router to subjects
// answered by hand, as a stream would answer, or badly, or not at all:
// each answer becomes the PubAck or the error jetstream's PublishMsg gives,
// and a wait ends at its timeout or with its context, at once, with the
// context's cause.
func TestAcks(t *testing.T) {
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	answer := func(subject, data string) {
		t.Helper()
		if _, err := nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond([]byte(data)) }); err != nil {
			t.Fatal(err)
		}
	}
	answer("ok", `{"stream":"AGENT_HISTORY","seq":42}`)
	answer("dup", `{"stream":"AGENT_HISTORY","seq":7,"duplicate":true}`)
	answer("wrong", `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"AGENT_HISTORY","seq":0}`)
	answer("garbage", `nope`)
	answer("nameless", `{"seq":1}`)
	if _, err := nc.SubscribeSync("silent"); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	a := &replies{nc: nc, stream: "AGENT_HISTORY"}
	pub := func(ctx context.Context, subject string, timeout time.Duration) (*jetstream.PubAck, error) {
		return a.publish(ctx, &nats.Msg{Subject: subject, Header: nats.Header{}, Data: []byte("x")}, timeout)
	}
	ctx := context.Background()
	if ack, err := pub(ctx, "ok", time.Minute); err != nil || ack.Sequence != 42 || ack.Stream != "AGENT_HISTORY" {
		t.Errorf("ok: %+v, %v", ack, err)
	}
	if ack, err := pub(ctx, "dup", time.Minute); err != nil || ack.Sequence != 7 || !ack.Duplicate {
		t.Errorf("duplicate: %+v, %v", ack, err)
	}
	if _, err := pub(ctx, "wrong", time.Minute); !isWrongLastSeq(err) {
		t.Errorf("wrong last sequence: %v", err)
	}
	if _, err := pub(ctx, "garbage", time.Minute); err == nil || !strings.Contains(err.Error(), `the stream's acknowledgement "nope"`) {
		t.Errorf("garbage: %v", err)
	}
	if _, err := pub(ctx, "nameless", time.Minute); err == nil || !strings.Contains(err.Error(), "names no stream") {
		t.Errorf("nameless: %v", err)
	}
	if _, err := pub(ctx, "nobody", time.Minute); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Errorf("no responders: %v", err)
	}
	if _, err := pub(ctx, "silent", 50*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("no answer: %v", err)
	}
	suspended := errors.New("the session was suspended")
	cctx, cancel := context.WithCancelCause(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := pub(cctx, "silent", time.Hour)
		done <- err
	}()
	cancel(suspended)
	select {
	case err := <-done:
		if !errors.Is(err, suspended) {
			t.Errorf("cancelled: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled wait did not end")
	}
	a.mu.Lock()
	left := len(a.waiting)
	a.mu.Unlock()
	if left != 0 {
		t.Errorf("%d waits left registered", left)
	}
}
