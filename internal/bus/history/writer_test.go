package history_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func open(t testing.TB, writer string) (*history.Store, jetstream.JetStream, *nats.Conn) {
	t.Helper()
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	subjects, _ := bus.NewSubjects("")
	st, err := history.Open(context.Background(), js, subjects, writer, history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return st, js, nc
}

// TestWriterIsFenced has two writers on one session, as a deposed and a new
// orchestrator would: once the second has written, every append of the
// first fails with ErrFenced, and nothing of it is stored.
func TestWriterIsFenced(t *testing.T) {
	ctx := context.Background()
	st, js, _ := open(t, "old")
	subjects, _ := bus.NewSubjects("")
	newer, err := history.Open(ctx, js, subjects, "new", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	old := st.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	if _, err := old.Append(ctx, "r1", agentfleet.NewUserMessage("one")); err != nil {
		t.Fatal(err)
	}
	loaded, err := newer.Load(ctx, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	taker := newer.Writer("default", "s", loaded.LastSeq, ownership.Unfenced, ownership.Fence{})
	if _, err := taker.Append(ctx, "r1", &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("from the new one")}}); err != nil {
		t.Fatal(err)
	}
	_, err = old.Append(ctx, "r1", &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("from the old one")}})
	if !errors.Is(err, history.ErrFenced) {
		t.Fatalf("append after the takeover: %v, want ErrFenced", err)
	}
	if _, err := old.AppendRunEnd(ctx, "r1", &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant}); !errors.Is(err, history.ErrFenced) {
		t.Errorf("run end after the takeover: %v, want ErrFenced", err)
	}
	got, err := st.Load(ctx, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	var writers []string
	for _, r := range got.Records {
		writers = append(writers, r.Writer)
	}
	if len(writers) != 2 || writers[0] != "old" || writers[1] != "new" {
		t.Errorf("writers of the stored records = %v, want [old new]", writers)
	}
}

// TestWriterWaitsForTheServer appends while the server is away: the append
// returns once the server is back, and the record is stored once.
func TestWriterWaitsForTheServer(t *testing.T) {
	dir, addr := t.TempDir(), bustest.FreeAddr(t)
	srv := bustest.MustRunNATSAt(t, addr, dir)
	url := srv.ClientURL()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	subjects, _ := bus.NewSubjects("")
	ctx := context.Background()
	st, err := history.Open(ctx, js, subjects, "w", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := st.Writer("default", "away", 0, ownership.Unfenced, ownership.Fence{})
	if _, err := w.Append(ctx, "r1", agentfleet.NewUserMessage("before")); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	done := make(chan error, 1)
	go func() {
		_, err := w.Append(ctx, "r1", agentfleet.NewUserMessage("during"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("append returned while the server was down: %v", err)
	default:
	}
	bustest.MustRunNATSAt(t, addr, dir)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("append did not return after the server came back")
	}
	got, err := st.Load(ctx, "default", "away")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 2 {
		t.Errorf("%d records stored, want 2", len(got.Records))
	}
}

// TestUndecodableRecordIsSkipped stores a broken record among good ones:
// the session loads without it, and the skipped record is named.
func TestUndecodableRecordIsSkipped(t *testing.T) {
	ctx := context.Background()
	st, js, _ := open(t, "w")
	w := st.Writer("default", "b", 0, ownership.Unfenced, ownership.Fence{})
	if _, err := w.Append(ctx, "r1", agentfleet.NewUserMessage("good")); err != nil {
		t.Fatal(err)
	}
	bad := nats.NewMsg("agent.history.default.b")
	bad.Data = []byte(`{"role":"robot"}`)
	bad.Header.Set(history.HeaderRunID, "r1")
	ack, err := js.PublishMsg(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Load(ctx, "default", "b")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 1 || len(got.Skipped) != 1 || got.Skipped[0].Seq != ack.Sequence || got.LastSeq != ack.Sequence {
		t.Fatalf("records %d, skipped %+v, last %d; want 1 record, record %d skipped and last", len(got.Records), got.Skipped, got.LastSeq, ack.Sequence)
	}
	// The writer goes on after the skipped record.
	w2 := st.Writer("default", "b", got.LastSeq, ownership.Unfenced, ownership.Fence{})
	if _, err := w2.Append(ctx, "r2", agentfleet.NewUserMessage("after")); err != nil {
		t.Fatal(err)
	}
}

// TestAppendEndsWithItsContext appends while the server is away and ends
// the append's context, as a suspension does: the append returns the
// context's cause, without waiting for the server.
func TestAppendEndsWithItsContext(t *testing.T) {
	dir, addr := t.TempDir(), bustest.FreeAddr(t)
	srv := bustest.MustRunNATSAt(t, addr, dir)
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	subjects, _ := bus.NewSubjects("")
	st, err := history.Open(context.Background(), js, subjects, "w", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := st.Writer("default", "ended", 0, ownership.Unfenced, ownership.Fence{})
	srv.Shutdown()
	srv.WaitForShutdown()
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := w.Append(ctx, "r1", agentfleet.NewUserMessage("during"))
		done <- err
	}()
	suspended := errors.New("suspended for the test")
	cancel(suspended)
	select {
	case err := <-done:
		if !errors.Is(err, suspended) {
			t.Fatalf("append after its context ended: %v, want its cause", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("append did not return after its context ended")
	}
}
