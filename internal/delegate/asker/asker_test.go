package asker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats.go"
)

// TestRun asks a child session whose orchestrator takes the ask but never
// answers: a timeout ends the call with ErrTimeout and aborts the child,
// naming the call; a suspension of the parent's run leaves the child
// running (no abort).
func TestRun(t *testing.T) {
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	subjects, err := bus.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	asks := make(chan *nats.Msg, 16)
	if _, err := nc.ChanSubscribe(subjects.Client(bus.KindAsk, "helper", "child"), asks); err != nil {
		t.Fatal(err)
	}
	aborts := make(chan *nats.Msg, 16)
	if _, err := nc.ChanSubscribe(subjects.Client(bus.KindAbort, "helper", "child"), aborts); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := Conn{NC: nc, Subjects: subjects, Log: slog.New(slog.DiscardHandler)}
	ask := Ask{
		Tool: "ask_helper", Target: "helper", Session: "child", Message: "hi",
		Parent:  &agentfleet.Parent{Agent: "main", Session: "s", RunID: "r1", ToolCallID: "c1"},
		Timeout: 300 * time.Millisecond, Every: time.Minute,
	}
	var progress []any
	_, err = c.Run(context.Background(), ask, func(p any) { progress = append(progress, p) })
	if !errors.Is(err, pipeline.ErrTimeout) || !strings.Contains(err.Error(), "agent helper did not answer call c1 of agent main within 300ms; its run was aborted") {
		t.Fatalf("timeout: err = %v", err)
	}
	m := <-asks
	var body struct{ Content, ID string }
	if err := json.Unmarshal(m.Data, &body); err != nil || body.Content != "hi" || body.ID == "" || m.Header.Get(nats.MsgIdHdr) != body.ID {
		t.Errorf("ask sent %q, headers %v (%v)", m.Data, m.Header, err)
	}
	select {
	case a := <-aborts:
		if !strings.Contains(string(a.Data), "did not answer call c1") {
			t.Errorf("abort %q", a.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a timed-out ask did not abort the child")
	}
	if len(progress) == 0 {
		t.Error("no progress naming the child")
	}

	// A suspension leaves the child running: its resumed call asks again.
	ctx, cancel := context.WithCancelCause(context.Background())
	ask.Timeout = 0
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, ask, func(any) {})
		done <- err
	}()
	<-asks
	cancel(loop.ErrSuspended)
	if err := <-done; err == nil {
		t.Fatal("a suspended ask returned no error")
	}
	// An abort sent after the suspension would come before this flush's
	// answer: the connection keeps the order of its messages.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-aborts:
		t.Errorf("a suspension aborted the child: %q", a.Data)
	default:
	}
}
