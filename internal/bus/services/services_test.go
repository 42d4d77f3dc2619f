package services_test

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
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/services"
	"github.com/nats-io/nats.go"
)

// agents is one agent "a" with one tool "echo", whose calls echo their
// arguments' "text"; it records the calls it ran.
type agents struct {
	mu    sync.Mutex
	calls []string // agent/session/name
}

func (g *agents) AgentTools(agent string) ([]agentfleet.ToolDef, []string, error) {
	if agent != "a" {
		return nil, []string{"a"}, fmt.Errorf("unknown agent %q (agents: a)", agent)
	}
	return []agentfleet.ToolDef{{Name: "echo"}}, []string{"a"}, nil
}

func (g *agents) CallTool(_ context.Context, agent, session string, call agentfleet.ToolCall) (*services.CallOutcome, error) {
	g.mu.Lock()
	g.calls = append(g.calls, agent+"/"+session+"/"+call.Name)
	g.mu.Unlock()
	if agent != "a" {
		return nil, errors.New("unknown agent " + agent)
	}
	text, _ := call.Arguments["text"].(string)
	return &services.CallOutcome{Result: &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text(text)}}, Kind: "ok"}, nil
}

// SessionHistory serves the records of stored for any session of "a".
func (g *agents) SessionHistory(_ context.Context, agent, session string) (*history.Loaded, error) {
	g.mu.Lock()
	g.calls = append(g.calls, agent+"/"+session+"/history")
	g.mu.Unlock()
	if agent != "a" {
		return nil, errors.New("unknown agent " + agent)
	}
	return stored(), nil
}

func (g *agents) ran() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.calls...)
}

// start serves g on a fresh NATS server and returns a client connection.
func start(t *testing.T, g services.Agents) (*nats.Conn, bus.Subjects) {
	t.Helper()
	s := bustest.MustRunNATS(t)
	subjects, err := bus.NewSubjects(bus.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	svc, err := services.Start(ctx, bustest.MustConnect(t, s), services.Config{Subjects: subjects}, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svc.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return bustest.MustConnect(t, s), subjects
}

func request[T any](t *testing.T, nc *nats.Conn, subject string, body []byte) *T {
	t.Helper()
	m, err := nc.Request(subject, body, 20*time.Second)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	var r T
	if err := json.Unmarshal(m.Data, &r); err != nil {
		t.Fatalf("reply on %s: %v: %q", subject, err, m.Data)
	}
	return &r
}

func TestToolsReply(t *testing.T) {
	nc, subjects := start(t, &agents{})
	for _, tc := range []struct {
		name, agent, tools, err string
	}{
		{"known agent", "a", "echo", ""},
		{"unknown agent", "b", "", `unknown agent "b" (agents: a)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request[services.ToolsReply](t, nc, subjects.AgentTools(tc.agent), nil)
			var names []string
			for _, d := range r.Tools {
				names = append(names, d.Name)
			}
			if got, want := strings.Join(names, ","), tc.tools; got != want {
				t.Errorf("tools = %q, want %q", got, want)
			}
			if got, want := r.Error, tc.err; got != want {
				t.Errorf("error = %q, want %q", got, want)
			}
			if got, want := r.Agent, tc.agent; got != want {
				t.Errorf("agent = %q, want %q", got, want)
			}
			if got, want := strings.Join(r.Agents, ","), "a"; got != want {
				t.Errorf("agents = %q, want %q", got, want)
			}
		})
	}
}

func TestCallReply(t *testing.T) {
	g := &agents{}
	nc, subjects := start(t, g)
	for _, tc := range []struct {
		name, agent, body, text, outcome, err string
	}{
		{"call", "a", `{"id":"c1","name":"echo","arguments":{"text":"hi"}}`, "hi", "ok", ""},
		{"unknown agent", "b", `{"id":"c2","name":"echo"}`, "", "", "unknown agent b"},
		{"not JSON", "a", `{`, "", "", "the request is not a JSON call"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request[client.CallReplyJSON](t, nc, subjects.Call(tc.agent, "s1"), []byte(tc.body))
			text := ""
			if r.Result != nil {
				text = agentfleet.JoinText(r.Result.Content)
			}
			if got, want := text, tc.text; got != want {
				t.Errorf("result = %q, want %q", got, want)
			}
			if got, want := r.Outcome, tc.outcome; got != want {
				t.Errorf("outcome = %q, want %q", got, want)
			}
			if got := r.Error; (tc.err == "") != (got == "") || !strings.Contains(got, tc.err) {
				t.Errorf("error = %q, want one with %q", got, tc.err)
			}
		})
	}
	if got, want := strings.Join(g.ran(), " "), "a/s1/echo b/s1/echo"; got != want {
		t.Errorf("calls run = %q, want %q", got, want)
	}
}

// TestRequestWithoutInboxIsNotAnswered: a request whose reply subject is
// no inbox is dropped: nothing is published there and the call is not run.
func TestRequestWithoutInboxIsNotAnswered(t *testing.T) {
	g := &agents{}
	nc, subjects := start(t, g)
	for _, tc := range []struct{ name, subject, body, next string }{
		{"tools", subjects.AgentTools("a"), "", subjects.AgentTools("a")},
		{"call", subjects.Call("a", "s1"), `{"id":"c1","name":"echo","arguments":{"text":"hi"}}`, subjects.Call("a", "s2")},
		{"history", subjects.SessionHistory("a", "s1"), "", subjects.SessionHistory("a", "s2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stray := bus.DefaultPrefix + ".stray." + tc.name
			sub, err := nc.SubscribeSync(stray)
			if err != nil {
				t.Fatal(err)
			}
			if err := nc.PublishRequest(tc.subject, stray, []byte(tc.body)); err != nil {
				t.Fatal(err)
			}
			// A request that is answered, after it on the same connection
			// and subject: once its answer is here, the first was handled.
			request[json.RawMessage](t, nc, tc.next, []byte(`{"id":"c2","name":"echo"}`))
			if n, _, _ := sub.Pending(); n != 0 {
				t.Errorf("%d messages on %s, want none", n, stray)
			}
		})
	}
	if got, want := strings.Join(g.ran(), " "), "a/s2/echo"; got != want {
		t.Errorf("calls run = %q, want only the answered one, %q", got, want)
	}
}
