package scriptfleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/nats-io/nats.go/jetstream"
)

func scriptDef(name, code string) *script.Definition {
	return &script.Definition{
		Name: name, Label: name, Description: "scripted " + name,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`),
		Code:        code,
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestScriptStore(t *testing.T) {
	ctx := testContext(t)
	nc := bustest.MustConnect(t, bustest.MustRunNATS(t))
	store, err := scriptfleet.NewStore(ctx, nc, scriptfleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := store.Bucket(), "agent_tools"; got != want {
		t.Fatalf("bucket %q, want %q", got, want)
	}
	// Binding an existing bucket works too.
	if _, err := scriptfleet.NewStore(ctx, nc, scriptfleet.StoreConfig{}); err != nil {
		t.Fatal(err)
	}

	if _, err := store.Get(ctx, "double"); !errors.Is(err, script.ErrNotFound) {
		t.Fatalf("Get of a missing tool: %v", err)
	}
	v1 := scriptDef("double", "def execute(args):\n    return str(args['x'] * 2)\n")
	v1.Replace = true // not stored
	rev1, err := store.Put(ctx, v1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, scriptDef("double", "x")); !errors.Is(err, script.ErrExists) {
		t.Fatalf("Put of an existing tool at revision 0: %v", err)
	}
	got, err := store.Get(ctx, "double")
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != rev1 || got.Code != v1.Code || got.Replace || got.Updated.IsZero() || string(got.InputSchema) != string(v1.InputSchema) {
		t.Fatalf("Get = %+v", got)
	}

	v2 := scriptDef("double", "def execute(args):\n    return str(args['x'] + args['x'])\n")
	v2.Revision = rev1
	rev2, err := store.Put(ctx, v2)
	if err != nil {
		t.Fatal(err)
	}
	// A writer that read revision 1 loses.
	stale := scriptDef("double", "stale")
	stale.Revision = rev1
	if _, err := store.Put(ctx, stale); !errors.Is(err, script.ErrConflict) {
		t.Fatalf("Put at a stale revision: %v", err)
	}
	if _, err := store.Put(ctx, scriptDef("other", "def execute(args):\n    return 'o'\n")); err != nil {
		t.Fatal(err)
	}
	list, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "double" || list[0].Revision != rev2 || list[1].Name != "other" {
		t.Fatalf("List = %+v", list)
	}

	if err := store.Delete(ctx, "double"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, "double"); !errors.Is(err, script.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := store.Delete(ctx, "double"); !errors.Is(err, script.ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
	hist, err := store.History(ctx, "double")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 || hist[0].Revision != rev1 || hist[0].Definition.Code != v1.Code ||
		hist[1].Revision != rev2 || hist[1].Definition.Code != v2.Code || !hist[2].Deleted || hist[2].Definition != nil {
		t.Fatalf("History = %+v", hist)
	}

	// Restore brings revision 1 back, as a new revision.
	rev4, err := store.Restore(ctx, "double", rev1)
	if err != nil {
		t.Fatal(err)
	}
	got, err = store.Get(ctx, "double")
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != rev4 || got.Code != v1.Code {
		t.Fatalf("after Restore: %+v", got)
	}
	// Created again after a delete, at revision 0.
	if err := store.Delete(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, scriptDef("other", "def execute(args):\n    return 'o2'\n")); err != nil {
		t.Fatalf("Put after Delete: %v", err)
	}
}

func TestScriptStoreHistoryIsBounded(t *testing.T) {
	ctx := testContext(t)
	nc := bustest.MustConnect(t, bustest.MustRunNATS(t))
	store, err := scriptfleet.NewStore(ctx, nc, scriptfleet.StoreConfig{Bucket: "small_tools", History: 2})
	if err != nil {
		t.Fatal(err)
	}
	d := scriptDef("t", "def execute(args):\n    return '1'\n")
	for range 4 {
		rev, err := store.Put(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		d.Revision = rev
	}
	hist, err := store.History(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 {
		t.Fatalf("%d revisions kept, want 2", len(hist))
	}
}

func TestScriptStoreWatch(t *testing.T) {
	ctx := testContext(t)
	nc := bustest.MustConnect(t, bustest.MustRunNATS(t))
	store, err := scriptfleet.NewStore(ctx, nc, scriptfleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rev1, err := store.Put(ctx, scriptDef("a", "def execute(args):\n    return 'a'\n"))
	if err != nil {
		t.Fatal(err)
	}
	// A value that is not a definition is reported, not fatal.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, store.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	junkRev, err := kv.Put(ctx, "junk", []byte("not json"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	updates, err := store.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	next := func() scriptfleet.Update {
		t.Helper()
		select {
		case u := <-updates:
			return u
		case <-ctx.Done():
			t.Fatal("no update")
			return scriptfleet.Update{}
		}
	}
	if u := next(); u.Name != "a" || u.Revision != rev1 || u.Definition == nil || u.Definition.Code == "" {
		t.Fatalf("first update %+v", u)
	}
	if u := next(); u.Name != "junk" || u.Revision != junkRev || u.Definition != nil || u.Err == nil || !strings.Contains(u.Err.Error(), "junk revision 2 is not a tool definition") {
		t.Fatalf("junk update %+v", u)
	}
	if _, err := store.Get(ctx, "junk"); err == nil {
		t.Fatal("Get of junk: no error")
	}
	if u := next(); !u.Synced {
		t.Fatalf("want Synced, got %+v", u)
	}
	rev2, err := store.Put(ctx, scriptDef("b", "def execute(args):\n    return 'b'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u := next(); u.Name != "b" || u.Revision != rev2 || u.Definition == nil {
		t.Fatalf("update %+v", u)
	}
	if err := store.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if u := next(); u.Name != "a" || u.Definition != nil || u.Err != nil {
		t.Fatalf("delete update %+v", u)
	}
	stop()
	for range updates {
	}
}
