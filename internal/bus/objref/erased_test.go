package objref_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
)

// TestPutAfterErased has a tool store a file for its run after the run's
// session was deleted (MarkErased, then the sweep of DeleteSession), as a
// call that finishes on its worker after the delete does: the worker
// deletes the object again and the call fails saying why, so the session
// holds no object. A run the delete did not stop (the session's next one,
// after the delete) stores its file; so does every run before any delete
// (no bucket yet).
func TestPutAfterErased(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	st := openStore(t, srv, objref.Limits{})
	c := serve(t, srv, st, tool("file", func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ref, err := objref.Put(ctx, strings.NewReader("private"), "text/plain", "f.txt")
		if err != nil {
			return nil, err
		}
		return &agentfleet.ToolResult{Content: []agentfleet.Content{ref}}, nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := func(session, runID string) (*agentfleet.ToolResult, error) {
		return c.Execute(ctx, &toolrpc.Call{ID: "c-" + session + runID, Name: "file", Agent: "default", Session: session, RunID: runID, Timeout: time.Minute}, func(any) {})
	}
	if res, err := run("s1", "r1"); err != nil {
		t.Fatalf("a call before any delete: %+v %v", res, err)
	}
	if err := st.MarkErased(ctx, "default", "s1", []string{"r1", "r2"}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.DeleteSession(ctx, "default", "s1"); n != 1 || err != nil {
		t.Fatalf("deleted %d objects, %v", n, err)
	}
	res, err := run("s1", "r2")
	if err == nil || !strings.Contains(err.Error(), "the session was deleted") {
		t.Fatalf("a call of a stopped run after the delete: %+v %v", res, err)
	}
	if n, err := st.SessionBytes(ctx, "default", "s1"); n != 0 || err != nil {
		t.Fatalf("the deleted session holds %d bytes of objects, %v", n, err)
	}
	if res, err := run("s1", "r3"); err != nil {
		t.Fatalf("a call of the session's next run: %+v %v", res, err)
	}
	if res, err := run("s2", "r2"); err != nil {
		t.Fatalf("a call of another session: %+v %v", res, err)
	}
	if n, _ := st.SessionBytes(ctx, "default", "s1"); n == 0 {
		t.Fatal("the next run's file is gone")
	}
}
