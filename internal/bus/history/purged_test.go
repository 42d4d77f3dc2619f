package history_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/nats-io/nats.go/jetstream"
)

// TestWriterAfterPurge has a writer store a record, then purges the
// session's subject as deleting a session does: the writer's next append
// is refused with ErrFenced at once (it expects a record the session no
// longer holds), nothing of it is stored, and a new writer that loads the
// session empty writes it anew.
func TestWriterAfterPurge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, js, _ := open(t, "old")
	subjects, _ := bus.NewSubjects("")
	w := st.Writer("default", "s1", 0, ownership.Unfenced, ownership.Fence{})
	if _, err := w.Append(ctx, "r1", &agentfleet.UserMessage{Role: agentfleet.RoleUser, Content: []agentfleet.Content{agentfleet.Text("hello")}}); err != nil {
		t.Fatal(err)
	}
	str, err := js.Stream(ctx, history.StreamName(subjects))
	if err != nil {
		t.Fatal(err)
	}
	if err := str.Purge(ctx, jetstream.WithPurgeSubject(subjects.History("default", "s1"))); err != nil {
		t.Fatal(err)
	}
	_, err = w.Append(ctx, "r1", &agentfleet.UserMessage{Role: agentfleet.RoleUser, Content: []agentfleet.Content{agentfleet.Text("again")}})
	if !errors.Is(err, history.ErrFenced) {
		t.Fatalf("append after the purge: %v, want ErrFenced", err)
	}
	loaded, err := st.Load(ctx, "default", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Records) != 0 || loaded.LastSeq != 0 {
		t.Fatalf("the purged session holds %d records (last %d)", len(loaded.Records), loaded.LastSeq)
	}
	fresh := st.Writer("default", "s1", loaded.LastSeq, ownership.Unfenced, ownership.Fence{})
	if _, err := fresh.Append(ctx, "r2", &agentfleet.UserMessage{Role: agentfleet.RoleUser, Content: []agentfleet.Content{agentfleet.Text("new")}}); err != nil {
		t.Fatalf("a new session of the same name: %v", err)
	}
}
