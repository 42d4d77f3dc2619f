package scriptfleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// scriptWorker is a process that serves scripts, with the sets it served.
type scriptWorker struct {
	srv     *scriptfleet.Server
	changes chan map[string]uint64
}

func startScriptWorker(t *testing.T, s *server.Server, env script.Env) *scriptWorker {
	t.Helper()
	w := &scriptWorker{changes: make(chan map[string]uint64, 16)}
	var err error
	w.srv, err = scriptfleet.Serve(testContext(t), bustest.MustConnect(t, s), scriptfleet.ServerConfig{
		Logger: quietLog, Env: env, Heartbeat: 100 * time.Millisecond,
		OnChange: func(served map[string]uint64) { w.changes <- served },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.srv.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

// await waits until the worker serves exactly want.
func (w *scriptWorker) await(t *testing.T, want map[string]uint64) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		if maps.Equal(w.srv.Served(), want) {
			return
		}
		select {
		case <-w.changes:
		case <-timeout:
			t.Fatalf("worker serves %v, want %v", w.srv.Served(), want)
		}
	}
}

// call calls the tool name as an agent that may use the tools allowed
// (the list a scripted tool's call_tool is bounded by).
func call(t *testing.T, c *toolrpc.ToolClient, name string, args map[string]any, allowed ...string) (string, error) {
	t.Helper()
	res, err := fleetexec.Executor{Client: c}.Execute(testContext(t), &pipeline.Prepared{
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name}},
		Call: agentfleet.ToolCall{ID: "call_" + name, Name: name}, Args: args, Timeout: 10 * time.Second,
		Allowed: allowed,
	}, func(any) {})
	if err != nil {
		return "", err
	}
	return agentfleet.JoinText(res.Content), nil
}

func discover(t *testing.T, nc *nats.Conn) map[string]*fleet.FleetTool {
	t.Helper()
	subjects, _ := bus.NewSubjects("")
	found, err := fleet.Discover(testContext(t), nc, subjects, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestScriptServer(t *testing.T) {
	ctx := testContext(t)
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	store, err := scriptfleet.NewStore(ctx, nc, scriptfleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	// A tool written before the worker starts is served at its start.
	rev1, err := store.Put(ctx, scriptDef("double", "def execute(args):\n    return str(args['x'] * 2)\n"))
	if err != nil {
		t.Fatal(err)
	}
	w1 := startScriptWorker(t, s, script.Env{})
	if got, want := w1.srv.Served(), map[string]uint64{"double": rev1}; !maps.Equal(got, want) {
		t.Fatalf("served at start %v, want %v", got, want)
	}
	w2 := startScriptWorker(t, s, script.Env{})
	if got, err := call(t, client, "double", map[string]any{"x": 21}); err != nil || got != "42" {
		t.Fatalf("double(21) = %q, %v", got, err)
	}

	// The endpoint carries the definition, as discovery reads it.
	found := discover(t, nc)
	if ft := found["double"]; ft == nil || ft.Description != "scripted double" || len(ft.Workers) != 2 ||
		string(ft.InputSchema) != `{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}` {
		t.Fatalf("discovered %+v", found["double"])
	}

	// Replacing changes the behaviour on every worker.
	v2 := scriptDef("double", "def execute(args):\n    return 'twice %d is %d' % (args['x'], args['x'] + args['x'])\n")
	v2.Revision = rev1
	rev2, err := store.Put(ctx, v2)
	if err != nil {
		t.Fatal(err)
	}
	w1.await(t, map[string]uint64{"double": rev2})
	w2.await(t, map[string]uint64{"double": rev2})
	for range 4 { // both workers answer in turn
		if got, err := call(t, client, "double", map[string]any{"x": 21}); err != nil || got != "twice 21 is 42" {
			t.Fatalf("double(21) after replace = %q, %v", got, err)
		}
	}

	// A second tool joins the first.
	rev3, err := store.Put(ctx, scriptDef("half", "def execute(args):\n    return str(args['x'] // 2)\n"))
	if err != nil {
		t.Fatal(err)
	}
	w1.await(t, map[string]uint64{"double": rev2, "half": rev3})
	w2.await(t, map[string]uint64{"double": rev2, "half": rev3})
	if got, err := call(t, client, "half", map[string]any{"x": 9}); err != nil || got != "4" {
		t.Fatalf("half(9) = %q, %v", got, err)
	}

	// A definition that does not check is not served; the others stay.
	if _, err := store.Put(ctx, scriptDef("broken", "def execute(args):\n    return nope\n")); err != nil {
		t.Fatal(err)
	}
	rev5, err := store.Put(ctx, scriptDef("later", "def execute(args):\n    return 'later'\n"))
	if err != nil {
		t.Fatal(err)
	}
	w1.await(t, map[string]uint64{"double": rev2, "half": rev3, "later": rev5})
	w2.await(t, map[string]uint64{"double": rev2, "half": rev3, "later": rev5})

	// Deleting removes the endpoint from $SRV.INFO on every worker.
	if err := store.Delete(ctx, "double"); err != nil {
		t.Fatal(err)
	}
	w1.await(t, map[string]uint64{"half": rev3, "later": rev5})
	w2.await(t, map[string]uint64{"half": rev3, "later": rev5})
	found = discover(t, nc)
	if found["double"] != nil {
		t.Fatalf("double is still discovered on %v", found["double"].Workers)
	}
	if found["half"] == nil || len(found["half"].Workers) != 2 {
		t.Fatalf("half is not served by both workers: %+v", found["half"])
	}
	if _, err := call(t, client, "double", map[string]any{"x": 1}); !errors.Is(err, pipeline.ErrNoResponders) {
		t.Fatalf("double after delete: %v, want no responders", err)
	}

	// Deleting every tool stops the service.
	for _, name := range []string{"half", "broken", "later"} {
		if err := store.Delete(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	w1.await(t, map[string]uint64{})
	w2.await(t, map[string]uint64{})
	if found := discover(t, nc); len(found) != 0 {
		t.Fatalf("tools left after deleting all: %v", slices.Sorted(maps.Keys(found)))
	}
}

func TestScriptServerAnnouncesChanges(t *testing.T) {
	ctx := testContext(t)
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	notices, err := nc.SubscribeSync("agent.fleet")
	if err != nil {
		t.Fatal(err)
	}
	store, err := scriptfleet.NewStore(ctx, nc, scriptfleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	w := startScriptWorker(t, s, script.Env{})
	rev, err := store.Put(ctx, scriptDef("t1", "def execute(args):\n    return 'x'\n"))
	if err != nil {
		t.Fatal(err)
	}
	w.await(t, map[string]uint64{"t1": rev})
	m, err := notices.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var n fleet.FleetNotice
	if err := json.Unmarshal(m.Data, &n); err != nil {
		t.Fatal(err)
	}
	if n.Event != "joined" || n.Service != "toolworker-scripts" || fmt.Sprint(n.Tools) != "[t1]" {
		t.Fatalf("notice %+v", n)
	}
}

func TestScriptCallToolOverTheBus(t *testing.T) {
	ctx := testContext(t)
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	// Go tools on an ordinary worker: add, and probe, which reports the
	// call_tool depth it sees.
	goTools, err := toolrpc.Serve(bustest.MustConnect(t, s), toolrpc.ServerConfig{Logger: quietLog, Tools: []*agentfleet.Tool{{
		ToolDef: agentfleet.ToolDef{Name: "add", Description: "a+b"},
		Handler: agentfleet.HandlerFunc(func(_ context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult(fmt.Sprint(number(c.Arguments["a"]) + number(c.Arguments["b"]))), nil
		}),
	}, {
		ToolDef: agentfleet.ToolDef{Name: "probe", Description: "depth"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult(fmt.Sprintf("depth %d, id %s", script.CallDepth(ctx, c.ID), c.ID)), nil
		}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { goTools.Stop() })
	store, err := scriptfleet.NewStore(ctx, nc, scriptfleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	anyObject := json.RawMessage(`{"type":"object"}`)
	put := func(name, code string) uint64 {
		t.Helper()
		rev, err := store.Put(ctx, &script.Definition{Name: name, Description: name, InputSchema: anyObject, Code: code})
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	served := map[string]uint64{
		"square": put("square", "def execute(args):\n    return str(args['n'] * args['n'])\n"),
		// (a + b)², from a Go tool and a scripted one, on other workers.
		"sum_squared": put("sum_squared", "def execute(args):\n    s = call_tool('add', {'a': args['a'], 'b': args['b']})\n    return call_tool('square', {'n': int(s)})\n"),
		"outer":       put("outer", "def execute(args):\n    return call_tool('inner', {})\n"),
		"inner":       put("inner", "def execute(args):\n    return call_tool('probe', {})\n"),
		// Calls itself until the depth limit refuses; full=True turns the
		// refusal into a value, returned up the chain.
		"loop": put("loop", "def execute(args):\n    return call_tool('loop', {}, full=True)['text']\n"),
	}
	w1 := startScriptWorker(t, s, script.Env{})
	w2 := startScriptWorker(t, s, script.Env{})
	w1.await(t, served)
	w2.await(t, served)
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	all := []string{"add", "probe", "square", "sum_squared", "outer", "inner", "loop"}
	if got, err := call(t, client, "sum_squared", map[string]any{"a": 2, "b": 3}, all...); err != nil || got != "25" {
		t.Fatalf("sum_squared(2, 3) = %q, %v", got, err)
	}
	// The depth travels with the calls across workers, in the call ID.
	got, err := call(t, client, "outer", nil, all...)
	if err != nil || !strings.HasPrefix(got, "depth 2, id call_outer~d2~") {
		t.Fatalf("outer = %q, %v", got, err)
	}
	// A tool that calls itself stops at the limit.
	got, err = call(t, client, "loop", nil, all...)
	if err != nil || got != `call_tool("loop"): the limit of 3 nested tool calls is reached; scripted tools cannot call each other deeper` {
		t.Fatalf("loop = %q, %v", got, err)
	}
}

// number reads a number of arguments that crossed MessagePack.
func number(v any) float64 {
	switch v := v.(type) {
	case int8:
		return float64(v)
	case int16:
		return float64(v)
	case int32:
		return float64(v)
	case int64:
		return float64(v)
	case uint8:
		return float64(v)
	case uint16:
		return float64(v)
	case uint32:
		return float64(v)
	case uint64:
		return float64(v)
	case float32:
		return float64(v)
	case float64:
		return v
	}
	return 0
}

// TestScriptCallToolHonoursCallerPermissions: a scripted tool's call_tool
// reaches only the tools its calling agent may use, and passes that bound on
// to the scripts it calls.
func TestScriptCallToolHonoursCallerPermissions(t *testing.T) {
	ctx := testContext(t)
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	secret, err := toolrpc.Serve(bustest.MustConnect(t, s), toolrpc.ServerConfig{Logger: quietLog, Tools: []*agentfleet.Tool{{
		ToolDef: agentfleet.ToolDef{Name: "secret", Description: "only some agents"},
		Handler: agentfleet.HandlerFunc(func(context.Context, *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult("the secret"), nil
		}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { secret.Stop() })
	store, err := scriptfleet.NewStore(ctx, nc, scriptfleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	anyObject := json.RawMessage(`{"type":"object"}`)
	served := map[string]uint64{}
	for name, code := range map[string]string{
		"peek":     "def execute(args):\n    return call_tool('secret', {}, full=True)['text']\n",
		"indirect": "def execute(args):\n    return call_tool('peek', {}, full=True)['text']\n",
	} {
		rev, err := store.Put(ctx, &script.Definition{Name: name, Description: name, InputSchema: anyObject, Code: code})
		if err != nil {
			t.Fatal(err)
		}
		served[name] = rev
	}
	w := startScriptWorker(t, s, script.Env{})
	w.await(t, served)
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	callAs := func(name string, allowed []string) string {
		t.Helper()
		res, err := fleetexec.Executor{Client: client}.Execute(ctx, &pipeline.Prepared{
			Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Scripted: true}},
			Call: agentfleet.ToolCall{ID: "call_" + name, Name: name}, Timeout: 10 * time.Second,
			Agent: "agent-a", Allowed: allowed,
		}, func(any) {})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return agentfleet.JoinText(res.Content)
	}
	if got := callAs("peek", []string{"peek", "secret"}); got != "the secret" {
		t.Errorf("allowed peek = %q", got)
	}
	if got, want := callAs("peek", []string{"peek"}), "call_tool: tool secret is not allowed for agent agent-a"; !strings.Contains(got, want) {
		t.Errorf("denied peek = %q, want %q", got, want)
	}
	// The bound travels to the scripts a script calls.
	if got, want := callAs("indirect", []string{"indirect", "peek"}), "tool secret is not allowed for agent agent-a"; !strings.Contains(got, want) {
		t.Errorf("indirect = %q, want %q", got, want)
	}
}
