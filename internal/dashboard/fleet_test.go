package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

// testFleet is a real fleet on an embedded NATS server with JetStream: a
// tool worker with echo and sleep, a durable orchestrator with a scripted
// model, and the dashboard served over HTTP.
type testFleet struct {
	srv  *server.Server
	nc   *nats.Conn // the test's own connection
	dash *dashboard.Handler
	url  string
	// objects is the fleet's object store, where the tools' large
	// results go.
	objects *objref.Store
}

// xssText is what the model makes echo return for "script": markup that
// would run if the page ever treated data as HTML.
const xssText = `<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">`

// scriptedModel answers the last user message:
//
//	echo <text>   one echo call with the text, then "done: <text>"
//	sleep <ms>    one sleep call, then "slept"
//	script        one echo call whose result is xssText, then the same as text
//	both          echo, sleep 400 ms and fail at once, then a summary
//	ask <agent> <text>  one ask_<agent> call with the text as its message
//	lookup <q>    one call of lookup, a tool only child workers serve
//
// and anything else with its own text. The text streams in deltas.
func scriptedModel() loop.Model {
	return loop.ModelFunc(func(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		usage := &agentfleet.Usage{InputTokens: 20, OutputTokens: 5, TotalTokens: 25}
		var user string
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if m, ok := req.Messages[i].(*agentfleet.UserMessage); ok {
				user = agentfleet.JoinText(m.Content)
				break
			}
		}
		if res, ok := req.Messages[len(req.Messages)-1].(*agentfleet.ToolResultMessage); ok {
			text := "done: " + agentfleet.JoinText(res.Content)
			for _, w := range strings.SplitAfter(text, " ") {
				onDelta(w)
			}
			return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text(text)}, StopReason: agentfleet.StopReasonStop, Usage: usage}, nil
		}
		verb, rest, _ := strings.Cut(user, " ")
		call := func(tool string, args map[string]any) (*agentfleet.AssistantMessage, error) {
			b, _ := json.Marshal(args)
			onDelta("calling " + tool)
			return &agentfleet.AssistantMessage{StopReason: agentfleet.StopReasonToolUse, Usage: usage,
				Content: []agentfleet.Content{agentfleet.Text("calling " + tool),
					{Type: agentfleet.ContentToolCall, ID: "call_" + verb, Name: tool, Arguments: b}}}, nil
		}
		switch verb {
		case "both":
			onDelta("three calls at once")
			return &agentfleet.AssistantMessage{StopReason: agentfleet.StopReasonToolUse, Usage: usage,
				Content: []agentfleet.Content{agentfleet.Text("three calls at once"),
					{Type: agentfleet.ContentToolCall, ID: "call_both_1", Name: "echo", Arguments: json.RawMessage(`{"text":"hello"}`)},
					{Type: agentfleet.ContentToolCall, ID: "call_both_2", Name: "sleep", Arguments: json.RawMessage(`{"ms":"400"}`)},
					{Type: agentfleet.ContentToolCall, ID: "call_both_3", Name: "fail", Arguments: json.RawMessage(`{"why":"to show a failure"}`)}}}, nil
		case "echo":
			return call("echo", map[string]any{"text": rest})
		case "sleep":
			return call("sleep", map[string]any{"ms": rest})
		case "lookup":
			return call("lookup", map[string]any{"q": rest})
		case "script":
			return call("echo", map[string]any{"text": xssText})
		case "file":
			return call("file", map[string]any{})
		case "ask":
			agent, message, _ := strings.Cut(rest, " ")
			return call("ask_"+agent, map[string]any{"message": message})
		}
		onDelta(user)
		return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text(user)}, StopReason: agentfleet.StopReasonStop, Usage: usage}, nil
	})
}

func testTools() []*agentfleet.Tool {
	tool := func(name string, h agentfleet.HandlerFunc) *agentfleet.Tool {
		return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Label: name, Description: "test tool " + name,
			InputSchema: json.RawMessage(`{"type":"object"}`), Parallel: true}, Handler: h}
	}
	return []*agentfleet.Tool{
		tool("echo", func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			text, _ := c.Arguments["text"].(string)
			return agentfleet.TextResult(text), nil
		}),
		tool("file", fileTool),
		tool("fail", func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return nil, errors.New("fail: the service behind this tool is down")
		}),
		tool("sleep", func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			var ms time.Duration
			if s, ok := c.Arguments["ms"].(string); ok {
				d, _ := time.ParseDuration(s + "ms")
				ms = d
			}
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(ms)
			for n := 1; ; n++ {
				select {
				case <-ctx.Done():
					return nil, errors.New("sleep: interrupted")
				case <-deadline:
					return agentfleet.TextResult("slept"), nil
				case <-tick.C:
					c.Progress(map[string]any{"ticks": n})
				}
			}
		}),
	}
}

// startFleet starts the fleet. opts.Config.Feed and the rest are set by
// dashboard.Open on a connection of its own.
func startFleet(t *testing.T, opts dashboard.Options) *testFleet {
	t.Helper()
	return startFleetTraced(t, opts, nil)
}

// startFleetTraced starts the fleet with an orchestrator that records its
// runs with tracer (nil for none).
func startFleetTraced(t *testing.T, opts dashboard.Options, tracer trace.Tracer) *testFleet {
	t.Helper()
	srv := bustest.MustRunNATS(t)
	f := &testFleet{srv: srv, nc: bustest.MustConnect(t, srv)}
	var err error
	tools := testTools()
	if f.objects, err = objref.OpenOn(context.Background(), f.nc, objref.Config{}); err != nil {
		t.Fatal(err)
	}
	for i, tl := range tools {
		tools[i] = objref.Offload(tl, f.objects)
	}
	ts, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Concurrency: 8, Heartbeat: 100 * time.Millisecond, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Stop() })
	o, err := orchestrator.New(bustest.MustConnect(t, srv), orchestrator.Config{
		Model: scriptedModel(), Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}, Tracer: tracer,
		// guarded's calls of echo wait for approval; boss may ask researcher.
		Profiles: []orchestrator.Profile{{Name: "default"}, {Name: "guarded", Approve: []string{"echo"}},
			{Name: "boss", Agents: []string{"researcher"}}, {Name: "researcher"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o.Close(ctx)
	})
	subjects, _ := bus.NewSubjects("")
	f.dash, err = dashboard.Open(context.Background(), bustest.MustConnect(t, srv), subjects, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(f.dash)
	t.Cleanup(func() {
		f.dash.Close()
		hs.Close()
	})
	f.url = hs.URL
	return f
}

// ask sends text to a session and waits for the run's answer.
func (f *testFleet) ask(t *testing.T, session, text string) *agentfleet.AssistantMessage {
	t.Helper()
	reply, err := f.nc.Request("agent.ask.default."+session, []byte(text), 15*time.Second)
	if err != nil {
		t.Fatalf("ask %s: %v", session, err)
	}
	var m agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &m); err != nil {
		t.Fatalf("ask %s answered %s: %v", session, reply.Data, err)
	}
	return &m
}

// send publishes text on a session's in subject.
func (f *testFleet) send(t *testing.T, session, text string) {
	t.Helper()
	if err := f.nc.Publish("agent.in.default."+session, []byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// httptestServer serves h for the test and returns its URL.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}
