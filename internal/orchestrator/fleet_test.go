package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// step answers one model call of a script.
type step func(req *loop.Request) *agentfleet.AssistantMessage

// script is a model that plays its steps in order, per session.
type script struct {
	mu    sync.Mutex
	steps map[string][]step
	seen  map[string][]*loop.Request
}

func newScript() *script {
	return &script{steps: map[string][]step{}, seen: map[string][]*loop.Request{}}
}

func (s *script) on(session string, steps ...step) *script {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps[session] = append(s.steps[session], steps...)
	return s
}

func (s *script) requests(session string) []*loop.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*loop.Request(nil), s.seen[session]...)
}

func (s *script) Complete(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	s.mu.Lock()
	n := len(s.seen[req.Session])
	s.seen[req.Session] = append(s.seen[req.Session], req)
	var st step
	if n < len(s.steps[req.Session]) {
		st = s.steps[req.Session][n]
	}
	s.mu.Unlock()
	if st == nil {
		return nil, fmt.Errorf("script: no step %d for session %s", n+1, req.Session)
	}
	m := st(req)
	if t := agentfleet.JoinText(m.Content); t != "" {
		onDelta(t)
	}
	return m, nil
}

func say(text string) step {
	return func(*loop.Request) *agentfleet.AssistantMessage {
		return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text(text)}, Model: "scripted", StopReason: agentfleet.StopReasonStop}
	}
}

// use asks for tool calls, each "name {json args}".
func use(calls ...string) step {
	return func(req *loop.Request) *agentfleet.AssistantMessage {
		m := &agentfleet.AssistantMessage{Model: "scripted", StopReason: agentfleet.StopReasonToolUse}
		for i, c := range calls {
			name, args, _ := strings.Cut(c, " ")
			m.Content = append(m.Content, agentfleet.Content{Type: agentfleet.ContentToolCall,
				ID: fmt.Sprintf("call_%d_%d", len(req.Messages), i), Name: name, Arguments: json.RawMessage(args)})
		}
		return m
	}
}

// sayResults answers with the text of the last batch's tool results.
func sayResults() step {
	return func(req *loop.Request) *agentfleet.AssistantMessage {
		var parts []string
		for i := len(req.Messages) - 1; i >= 0; i-- {
			tr, ok := req.Messages[i].(*agentfleet.ToolResultMessage)
			if !ok {
				break
			}
			parts = append([]string{tr.ToolName + "=" + agentfleet.JoinText(tr.Content)}, parts...)
		}
		return say(strings.Join(parts, "; "))(req)
	}
}

// events follows the event subjects like a dashboard would. Its messages
// go into a channel in the order the connection reads them, and list and
// wait take what is there first: an event the orchestrator published
// before a message the test has read on another subscription of the same
// connection (its final message on agent.out) is always seen.
type events struct {
	t   *testing.T
	mu  sync.Mutex
	all []agentfleet.Event
	ch  chan *nats.Msg
}

func subscribeEvents(t *testing.T, nc *nats.Conn, subject string) *events {
	t.Helper()
	ev := &events{t: t, ch: make(chan *nats.Msg, 1<<16)}
	sub, err := nc.ChanSubscribe(subject, ev.ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	return ev
}

// addLocked decodes and keeps one event message; ev.mu held.
func (ev *events) addLocked(m *nats.Msg) {
	var e agentfleet.Event
	if err := json.Unmarshal(m.Data, &e); err != nil {
		ev.t.Errorf("event on %s does not decode: %v", m.Subject, err)
		return
	}
	if want := "agent.events."; !strings.HasPrefix(m.Subject, want) || !strings.HasSuffix(m.Subject, "."+string(e.Type)) {
		ev.t.Errorf("event %s published on %s", e.Type, m.Subject)
	}
	ev.all = append(ev.all, e)
}

// drainLocked keeps every event message received so far; ev.mu held.
func (ev *events) drainLocked() {
	for {
		select {
		case m := <-ev.ch:
			ev.addLocked(m)
		default:
			return
		}
	}
}

// wait returns the first event that matches, waiting up to 10 seconds.
func (ev *events) wait(t *testing.T, what string, match func(agentfleet.Event) bool) agentfleet.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ev.mu.Lock()
		ev.drainLocked()
		for _, e := range ev.all {
			if match(e) {
				ev.mu.Unlock()
				return e
			}
		}
		ev.mu.Unlock()
		select {
		case m := <-ev.ch:
			ev.mu.Lock()
			ev.addLocked(m)
			ev.mu.Unlock()
		case <-deadline:
			t.Fatalf("no event %s within 10s", what)
		}
	}
}

func (ev *events) list(match func(agentfleet.Event) bool) []agentfleet.Event {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.drainLocked()
	var out []agentfleet.Event
	for _, e := range ev.all {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

func isType(t agentfleet.EventType) func(agentfleet.Event) bool {
	return func(e agentfleet.Event) bool { return e.Type == t }
}

// testFleet is a NATS server, an orchestrator and its workers.
type testFleet struct {
	srv  *server.Server
	nc   *nats.Conn
	orch *orchestrator.Orchestrator
	// orchConn is the orchestrator's own connection.
	orchConn *nats.Conn
	events   *events
	workers  []*toolrpc.ToolServer
}

func startFleet(t *testing.T, cfg orchestrator.Config, workers ...toolrpc.ServerConfig) *testFleet {
	t.Helper()
	f := &testFleet{srv: bustest.MustRunNATS(t)}
	f.nc = bustest.MustConnect(t, f.srv)
	f.events = subscribeEvents(t, f.nc, "agent.events.>")
	for _, wc := range workers {
		f.addWorker(t, wc)
	}
	if cfg.Discovery.Wait == 0 {
		cfg.Discovery.Wait = 200 * time.Millisecond
	}
	var err error
	f.orchConn = bustest.MustConnect(t, f.srv)
	f.orch, err = orchestrator.New(f.orchConn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.orch.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.orch.Close(ctx); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			t.Errorf("close orchestrator: %v", err)
		}
	})
	return f
}

// restart stops the fleet's orchestrator gracefully and starts another,
// of cfg, on the same server, as an operator's restart does; it is closed
// when the test ends.
func (f *testFleet) restart(t *testing.T, cfg orchestrator.Config) *orchestrator.Orchestrator {
	t.Helper()
	stopped, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.orch.Close(stopped); err != nil {
		t.Fatal(err)
	}
	if cfg.Discovery.Wait == 0 {
		cfg.Discovery.Wait = 200 * time.Millisecond
	}
	o, err := orchestrator.New(bustest.MustConnect(t, f.srv), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close(context.Background()) })
	return o
}

func (f *testFleet) addWorker(t *testing.T, wc toolrpc.ServerConfig) *toolrpc.ToolServer {
	t.Helper()
	if wc.Heartbeat == 0 {
		wc.Heartbeat = 100 * time.Millisecond
	}
	w, err := toolrpc.Serve(bustest.MustConnect(t, f.srv), wc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	f.workers = append(f.workers, w)
	return w
}

// ask sends an ask request and decodes the final message.
func (f *testFleet) ask(t *testing.T, agent, session, payload string) *agentfleet.AssistantMessage {
	t.Helper()
	m, err := f.nc.Request("agent.ask."+agent+"."+session, []byte(payload), 15*time.Second)
	if err != nil {
		t.Fatalf("ask %s.%s: %v", agent, session, err)
	}
	var a agentfleet.AssistantMessage
	if err := json.Unmarshal(m.Data, &a); err != nil {
		t.Fatalf("ask reply does not decode: %v: %s", err, m.Data)
	}
	return &a
}

func tool(name string, parallel bool, h agentfleet.HandlerFunc) *agentfleet.Tool {
	return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Label: name, Description: "test tool " + name, Parallel: parallel,
		InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: agentfleet.Annotations{Idempotent: true}}, Handler: h}
}

func echo(name string) *agentfleet.Tool {
	return tool(name, true, func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
		b, _ := json.Marshal(c.Arguments)
		return agentfleet.TextResult(name + string(b)), nil
	})
}

type loopRequest = loop.Request

func find(o *orchestrator.Orchestrator, agent, tool string) (agentfleet.ToolDef, bool) {
	defs, _ := o.Tools(agent)
	for _, d := range defs {
		if d.Name == tool {
			return d, true
		}
	}
	return agentfleet.ToolDef{}, false
}

func prepared(name string, timeout time.Duration) *pipeline.Prepared {
	return &pipeline.Prepared{
		Tool:    &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name}},
		Call:    agentfleet.ToolCall{ID: "call-" + name, Name: name, Arguments: map[string]any{}},
		Args:    map[string]any{},
		Timeout: timeout,
	}
}

func roles(ms []agentfleet.Message) string {
	var out []string
	for _, m := range ms {
		s := m.MessageRole()
		if u, ok := m.(*agentfleet.UserMessage); ok {
			s += ":" + agentfleet.JoinText(u.Content)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}
